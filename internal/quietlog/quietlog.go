package quietlog

import (
	"io"

	"github.com/sirupsen/logrus"
)

// New returns a logger that discards every entry.
func New() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}
