package cdi

import (
	"github.com/sirupsen/logrus"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/migpro/migpro/defaults"
)

const (
	// DefaultSpecDir is where podman and containerd look for runtime-made
	// specs (podman 4.3 reads only /etc/cdi and /var/run/cdi).
	DefaultSpecDir = "/var/run/cdi"
	// DefaultKind is migpro's CDI kind. It is never NVIDIA's "nvidia.com/gpu".
	DefaultKind = defaults.CDIKind
)

// Option configures a Writer.
type Option func(*config)

type config struct {
	dir    string
	kind   string
	extra  specs.ContainerEdits
	each   func(Instance) specs.ContainerEdits
	driver Driver
	fsync  bool
	log    logrus.FieldLogger
}

// WithSpecDir sets the directory the specs are written to.
func WithSpecDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithKind sets the CDI kind, "vendor/class", of every spec.
func WithKind(kind string) Option { return func(c *config) { c.kind = kind } }

// WithExtraEdits adds edits (hooks, mounts, env, device nodes) to every
// instance's device, after migpro's own; given more than once, the edits
// add up in order. The agent passes the hook package's telemetry hook, shim
// mount and env here. The edits are copied.
func WithExtraEdits(e specs.ContainerEdits) Option {
	return func(c *config) { c.extra = appendEdits(c.extra, e) }
}

// WithInstanceEdits adds the edits fn makes for each instance to that
// instance's device, after the extra edits. The agent passes the telemetry
// hook here: its arguments name the instance the spec injects, so the hook
// registers the container with the instances its specs gave it and nothing
// the container itself names.
func WithInstanceEdits(fn func(Instance) specs.ContainerEdits) Option {
	return func(c *config) { c.each = fn }
}

// WithDriver composes every spec with the driver's edits: its common edits
// (libraries, binaries, firmware, IPC sockets, control nodes, hooks) at the
// spec level, read once by NewWriter, and its device edits for each instance
// where it can make them. Without it, specs carry migpro's device nodes only.
func WithDriver(d Driver) Option { return func(c *config) { c.driver = d } }

// WithLogger sets the logger; the default is logrus's standard logger.
func WithLogger(l logrus.FieldLogger) Option { return func(c *config) { c.log = l } }

// WithFsync makes every write and removal durable against power loss (fsync
// of the file and the directory). Off by default: specs in /var/run and the
// MIG instances they describe both end with a reboot, and the rename alone is
// atomic for every reader and across an agent crash.
func WithFsync(on bool) Option { return func(c *config) { c.fsync = on } }
