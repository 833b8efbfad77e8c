package cli

import (
	"fmt"

	"github.com/sirupsen/logrus"
)

// NewLogger is a daemon's one logger, from its --log-level and
// --log-format flags (text or json). Its callers log with lower snake_case
// keys.
func NewLogger(level, format string) (*logrus.Logger, error) {
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	log := logrus.New()
	log.SetLevel(lvl)
	switch format {
	case "text":
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	case "json":
		log.SetFormatter(&logrus.JSONFormatter{})
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
	return log, nil
}
