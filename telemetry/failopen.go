package telemetry

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// FailOpen is the body of the hook's fail-open report.
type FailOpen = telemetryapi.FailOpen

// OnFailOpen subscribes fn to every container the hook let start without
// telemetry, with the registration the hook made for it and the reason.
// The agent's cluster link records an Event on the container's pod.
func (s *Service) OnFailOpen(fn func(r Registration, reason string)) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.failOpens = append(s.failOpens, fn)
}

// ReportFailOpen records that the hook let registered container id start
// without telemetry: it ends the registration (as Deregister does), logs
// one line and tells the OnFailOpen subscribers. The reason is kept to one
// printable line of at most telemetryapi.MaxFailOpenReason bytes.
func (s *Service) ReportFailOpen(id, reason string) error {
	c := s.get(id)
	if c == nil {
		return fmt.Errorf("telemetry: fail-open of %q: %w", id, ErrUnknownContainer)
	}
	c.mu.Lock()
	reg := c.reg.Clone()
	c.mu.Unlock()
	reason = oneLine(reason, telemetryapi.MaxFailOpenReason)
	if reason == "" {
		return fmt.Errorf("%w: fail-open of %q without a reason", ErrInvalid, id)
	}
	if err := s.Deregister(id); err != nil && !errors.Is(err, ErrUnknownContainer) {
		s.cfg.log.WithError(err).WithField("container_id", id).Warn("telemetry: ending a fail-open registration")
	}
	fields := logrus.Fields{"container_id": id, "reason": reason}
	if reg.PodName != "" {
		fields["pod"] = reg.PodNamespace + "/" + reg.PodName
		fields["container"] = reg.ContainerName
	}
	s.cfg.log.WithFields(fields).Warn("container started without telemetry (fail-open)")
	s.subMu.Lock()
	subs := append([]func(Registration, string){}, s.failOpens...)
	s.subMu.Unlock()
	for _, fn := range subs {
		fn(reg, reason)
	}
	return nil
}

// oneLine replaces every control or non-printing character of s with a
// space, trims it, and cuts it to at most n bytes on a rune boundary.
func oneLine(s string, n int) string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s))
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
