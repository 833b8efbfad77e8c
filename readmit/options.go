package readmit

import (
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/migpro/migpro/defaults"
)

// Option configures a Marker, a Webhook or an EvictionGuard. Each takes the
// options that apply to it and ignores the others.
type Option func(*settings)

type settings struct {
	domain        string
	node          string
	log           logrus.FieldLogger
	backoff       wait.Backoff
	lookupTimeout time.Duration
	agentUsers    []string
	mode          Mode
	labelOverride bool
}

// errNoLogger is what every constructor refuses to build without.
var errNoLogger = errors.New("readmit: no logger (WithLogger)")

func newSettings(opts []Option) (settings, error) {
	st := settings{domain: defaults.Domain, backoff: DefaultEvictBackoff,
		lookupTimeout: 2 * time.Second, agentUsers: []string{DefaultAgentUser}}
	for _, o := range opts {
		o(&st)
	}
	if st.domain == "" {
		st.domain = defaults.Domain
	}
	if st.log == nil {
		return settings{}, errNoLogger
	}
	if st.lookupTimeout <= 0 {
		st.lookupTimeout = 2 * time.Second
	}
	if st.mode == "" {
		st.mode = DefaultMode
	}
	if len(st.agentUsers) == 0 {
		st.agentUsers = []string{DefaultAgentUser}
	}
	return st, nil
}

// WithDomain sets the resource domain (default defaults.Domain).
func WithDomain(d string) Option { return func(s *settings) { s.domain = d } }

// WithNodeName is the agent's node (Marker): marks for pods bound elsewhere
// are ignored, and events name it as their source host.
func WithNodeName(n string) Option { return func(s *settings) { s.node = n } }

// WithLogger sets the logger. It is required: a constructor without one
// refuses to build (muted callers pass internal/quietlog).
func WithLogger(l logrus.FieldLogger) Option { return func(s *settings) { s.log = l } }

// WithEvictBackoff sets how a refused (429) eviction is retried (Marker;
// default DefaultEvictBackoff); Steps is the number of retries.
func WithEvictBackoff(b wait.Backoff) Option { return func(s *settings) { s.backoff = b } }

// WithLookupTimeout bounds the API read a webhook makes per review (Webhook,
// EvictionGuard; default 2 s), well under the webhooks' timeoutSeconds.
func WithLookupTimeout(d time.Duration) Option { return func(s *settings) { s.lookupTimeout = d } }

// WithAgentUsers sets the identities the EvictionGuard limits to their own
// node (default DefaultAgentUser). Evictions by anyone else are allowed: the
// webhook's matchConditions normally keep them from reaching it.
func WithAgentUsers(users ...string) Option {
	return func(s *settings) { s.agentUsers = append([]string(nil), users...) }
}
