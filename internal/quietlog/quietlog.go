package quietlog

import (
	"io"

	"github.com/sirupsen/logrus"
)

// New returns a logrus logger that writes nothing.
func New() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}
