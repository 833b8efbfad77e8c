package plugin

import (
	"time"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/defaults"
)

// Option configures a Manager.
type Option func(*config)

type config struct {
	dir        string
	domain     string
	check      AllocateCheck
	prefer     Preference
	observe    AllocateObserver
	log        logrus.FieldLogger
	backoffMin time.Duration
	backoffMax time.Duration
	regTimeout time.Duration
}

func defaultConfig() config {
	return config{
		dir:        defaults.PluginDir,
		domain:     defaults.Domain,
		prefer:     DefaultPreference,
		backoffMin: 100 * time.Millisecond,
		backoffMax: 5 * time.Second,
		regTimeout: 5 * time.Second,
	}
}

// WithPluginDir sets the kubelet's device-plugin directory, which holds
// kubelet.sock and the plugins' sockets.
func WithPluginDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithDomain sets the resource domain (default "nvidia.com").
func WithDomain(domain string) Option { return func(c *config) { c.domain = domain } }

// WithAllocateCheck lets the agent refuse or record an allocation.
func WithAllocateCheck(f AllocateCheck) Option { return func(c *config) { c.check = f } }

// WithPreference sets how GetPreferredAllocation chooses (default
// DefaultPreference).
func WithPreference(f Preference) Option { return func(c *config) { c.prefer = f } }

// AllocateObserver hears how long each kubelet Allocate call took for a
// resource, and whether it failed (metrics).
type AllocateObserver func(resource string, took time.Duration, err error)

// WithAllocateObserver sets f to hear every Allocate call.
func WithAllocateObserver(f AllocateObserver) Option { return func(c *config) { c.observe = f } }

// WithLogger sets the logger; the default is logrus's standard logger.
func WithLogger(l logrus.FieldLogger) Option { return func(c *config) { c.log = l } }

// WithRegisterBackoff sets the first and the longest wait between
// registration attempts while the kubelet does not answer.
func WithRegisterBackoff(first, longest time.Duration) Option {
	return func(c *config) { c.backoffMin, c.backoffMax = first, longest }
}
