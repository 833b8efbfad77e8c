package klogrus

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// Route sends what client-go and the other Kubernetes libraries log
// through klog to log, so a daemon writes one format: each klog line becomes
// one logrus entry, with component=klog and klog's key/value pairs as
// fields. klog's verbosity levels above 1 are debug; errors are errors.
func Route(log logrus.FieldLogger) {
	klog.SetLogger(logr.New(&klogSink{log: log.WithField("component", "klog")}))
}

// klogSink is a logr.LogSink writing to logrus.
type klogSink struct {
	log  *logrus.Entry
	name string
}

func (s *klogSink) Init(logr.RuntimeInfo) {}

// Enabled: klog's V(0) and V(1) are info, higher levels are debug.
func (s *klogSink) Enabled(level int) bool {
	if level <= 1 {
		return s.log.Logger.IsLevelEnabled(logrus.InfoLevel)
	}
	return s.log.Logger.IsLevelEnabled(logrus.DebugLevel)
}

func (s *klogSink) Info(level int, msg string, kv ...any) {
	e := s.entry(kv)
	if level <= 1 {
		e.Info(strings.TrimSpace(msg))
		return
	}
	e.Debug(strings.TrimSpace(msg))
}

func (s *klogSink) Error(err error, msg string, kv ...any) {
	s.entry(kv).WithError(err).Error(strings.TrimSpace(msg))
}

func (s *klogSink) WithValues(kv ...any) logr.LogSink {
	return &klogSink{log: s.entry(kv), name: s.name}
}

func (s *klogSink) WithName(name string) logr.LogSink {
	if s.name != "" {
		name = s.name + "." + name
	}
	return &klogSink{log: s.log.WithField("logger", name), name: name}
}

// entry adds klog's key/value pairs as fields; a key that is not a string
// is printed as one.
func (s *klogSink) entry(kv []any) *logrus.Entry {
	if len(kv) == 0 {
		return s.log
	}
	f := logrus.Fields{}
	for i := 0; i < len(kv); i += 2 {
		k := fmt.Sprint(kv[i])
		if i+1 < len(kv) {
			f[k] = kv[i+1]
		} else {
			f[k] = "(missing)"
		}
	}
	return s.log.WithFields(f)
}
