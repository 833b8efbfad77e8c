package cdi

import (
	"path/filepath"

	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/NVIDIA/nvidia-container-toolkit/pkg/nvcdi/transform"
	transformroot "github.com/NVIDIA/nvidia-container-toolkit/pkg/nvcdi/transform/root"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/nvcdi"
	"github.com/sirupsen/logrus"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// Defaults of NVIDIA's own tools (nvidia-ctk cdi generate, the device
// plugin): the driver is installed at /, device nodes are under the driver
// root, and the hook binary is /usr/bin/nvidia-cdi-hook.
const (
	DefaultDriverRoot        = "/"
	DefaultNVIDIACDIHookPath = "/usr/bin/nvidia-cdi-hook"
	defaultMIGMinorsFile     = "/proc/driver/nvidia-caps/mig-minors"
)

// DriverOption configures an NVIDIADriver.
type DriverOption func(*driverConfig)

type driverConfig struct {
	driverRoot  string
	hostRoot    string
	devRoot     string
	hookPath    string
	deviceEdits bool
	noHooks     bool
	log         logrus.FieldLogger
}

// WithoutHooks leaves nvidia-cdi-hook out of the edits, for a host that
// does not have it: a container whose spec names a missing hook cannot
// start, one without the hooks starts without the driver's library links
// and ldcache update (agent.ResolveCDIHook decides).
func WithoutHooks() DriverOption { return func(c *driverConfig) { c.noHooks = true } }

// WithDriverRoot sets where the driver's libraries and binaries are installed
// (default DefaultDriverRoot).
func WithDriverRoot(dir string) DriverOption { return func(c *driverConfig) { c.driverRoot = dir } }

// WithHostDriverRoot sets the host's path of the driver root when the agent
// sees it elsewhere, as in a container that mounts the host's driver root at
// /driver-root: the files are found under the driver root, and the specs
// name them under the host's (default: the driver root itself).
func WithHostDriverRoot(dir string) DriverOption { return func(c *driverConfig) { c.hostRoot = dir } }

// WithDevRoot sets the directory holding dev/ with the driver's device nodes
// (default: the driver root).
func WithDevRoot(dir string) DriverOption { return func(c *driverConfig) { c.devRoot = dir } }

// WithHookPath sets the host path of nvidia-cdi-hook put in the specs' hooks
// (default DefaultNVIDIACDIHookPath).
func WithHookPath(path string) DriverOption { return func(c *driverConfig) { c.hookPath = path } }

// WithDeviceEdits lets nvcdi make the instances' device edits too. It works
// only on a host whose driver lists the MIG capability minors in
// /proc/driver/nvidia-caps/mig-minors (a real driver); a simulated GPU leaves
// it off and migpro's own device-node edits are used.
func WithDeviceEdits(on bool) DriverOption { return func(c *driverConfig) { c.deviceEdits = on } }

// WithDriverLogger sets the logger for nvcdi's messages (default logrus's
// standard logger).
func WithDriverLogger(l logrus.FieldLogger) DriverOption { return func(c *driverConfig) { c.log = l } }

// NVIDIADriver makes the driver's edits with NVIDIA's nvcdi (the library
// behind nvidia-ctk cdi generate, NVIDIA's device plugin and DRA driver),
// driven by the NVML it is given.
type NVIDIADriver struct {
	lib nvcdi.Interface
	// toHost rewrites paths under the driver root to the host's driver
	// root (nil: they are the same).
	toHost      transform.Transformer
	version     string
	deviceEdits bool
	noHooks     bool
	minorsFile  string
	log         logrus.FieldLogger

	once      sync.Once
	common    specs.ContainerEdits
	commonErr error
}

var _ Driver = (*NVIDIADriver)(nil)

// NewNVIDIADriver checks the configuration and reads the driver version
// through lib, the agent's own NVML (the real library or the simulated one),
// whose driver version selects the driver's files. It fails when the driver
// root does not exist or NVML gives no driver version.
func NewNVIDIADriver(lib nvml.Interface, opts ...DriverOption) (*NVIDIADriver, error) {
	if lib == nil {
		return nil, errors.New("NVIDIA driver edits: no NVML library")
	}
	c := driverConfig{driverRoot: DefaultDriverRoot, hookPath: DefaultNVIDIACDIHookPath}
	for _, o := range opts {
		o(&c)
	}
	if c.driverRoot == "" {
		c.driverRoot = DefaultDriverRoot
	}
	if c.devRoot == "" {
		c.devRoot = c.driverRoot
	}
	if c.hookPath == "" {
		c.hookPath = DefaultNVIDIACDIHookPath
	}
	if c.log == nil {
		return nil, errors.New("NVIDIA driver edits: no logger (WithDriverLogger)")
	}
	for _, d := range []struct{ flag, dir string }{{"driver root", c.driverRoot}, {"dev root", c.devRoot}} {
		fi, err := os.Stat(d.dir)
		if err != nil {
			return nil, fmt.Errorf("NVIDIA driver edits: %s: %w", d.flag, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("NVIDIA driver edits: %s %s is not a directory", d.flag, d.dir)
		}
	}
	version, err := driverVersion(lib)
	if err != nil {
		return nil, fmt.Errorf("NVIDIA driver edits: %w", err)
	}
	log := c.log.WithField("component", "nvcdi")
	cdiLib, err := nvcdi.New(
		nvcdi.WithMode(nvcdi.ModeNvml),
		nvcdi.WithNvmlLib(lib),
		nvcdi.WithDriverRoot(c.driverRoot),
		nvcdi.WithDevRoot(c.devRoot),
		nvcdi.WithNVIDIACDIHookPath(c.hookPath),
		nvcdi.WithLogger(nvcdiLogger{log}),
		// Additional GIDs need cdiVersion 0.7.0, which podman 4.3 cannot
		// read; the device nodes' own modes and the runtime's device cgroup
		// rules already grant access.
		nvcdi.WithFeatureFlags(nvcdi.FeatureNoAdditionalGIDsForDeviceNodes, nvcdi.FeatureDisableNvsandboxUtils),
	)
	if err != nil {
		return nil, fmt.Errorf("NVIDIA driver edits: %w", err)
	}
	var toHost transform.Transformer
	if c.hostRoot != "" && filepath.Clean(c.hostRoot) != filepath.Clean(c.driverRoot) {
		toHost = transformroot.New(transformroot.WithRoot(c.driverRoot), transformroot.WithTargetRoot(c.hostRoot),
			transformroot.WithRelativeTo("host"))
	}
	return &NVIDIADriver{lib: cdiLib, toHost: toHost, version: version, deviceEdits: c.deviceEdits, noHooks: c.noHooks, minorsFile: defaultMIGMinorsFile, log: log}, nil
}

// driverVersion asks NVML for the driver version, e.g. "570.86.15".
func driverVersion(lib nvml.Interface) (string, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return "", fmt.Errorf("initialise NVML: %v", ret.Error())
	}
	defer lib.Shutdown()
	v, ret := lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("read the driver version through NVML: %v", ret.Error())
	}
	if v == "" {
		return "", errors.New("NVML reports an empty driver version")
	}
	return v, nil
}

// Version is the driver version the edits were made for.
func (d *NVIDIADriver) Version() string { return d.version }

// CommonEdits returns nvcdi's common edits. It fails when the driver's
// libraries for the NVML-reported version are not under the driver root.
// They are discovered once: a driver upgrade is seen by a new NVIDIADriver,
// made when the agent starts again.
func (d *NVIDIADriver) CommonEdits() (specs.ContainerEdits, error) {
	d.once.Do(func() { d.common, d.commonErr = d.discoverCommon() })
	return cloneEdits(d.common), d.commonErr
}

func (d *NVIDIADriver) discoverCommon() (specs.ContainerEdits, error) {
	e, err := d.lib.GetCommonEdits()
	if err != nil {
		return specs.ContainerEdits{}, fmt.Errorf("driver %s: %w", d.version, oneLine(err))
	}
	if e == nil || e.ContainerEdits == nil {
		return specs.ContainerEdits{}, fmt.Errorf("driver %s: nvcdi returned no common edits", d.version)
	}
	if len(e.Mounts) == 0 {
		return specs.ContainerEdits{}, fmt.Errorf("driver %s: no driver libraries found for this version", d.version)
	}
	return d.onHost(*e.ContainerEdits)
}

// onHost rewrites the edits' paths under the driver root to the host's.
func (d *NVIDIADriver) onHost(e specs.ContainerEdits) (specs.ContainerEdits, error) {
	if d.noHooks {
		e.Hooks = nil
	}
	if d.toHost == nil {
		return e, nil
	}
	spec := specs.Spec{ContainerEdits: e}
	if err := d.toHost.Transform(&spec); err != nil {
		return specs.ContainerEdits{}, fmt.Errorf("driver %s: paths to the host's driver root: %w", d.version, err)
	}
	return spec.ContainerEdits, nil
}

// DeviceEdits returns nvcdi's edits for the MIG device when DeviceEdits was
// set and the host's MIG minors file exists, and ok false otherwise.
func (d *NVIDIADriver) DeviceEdits(i Instance) (specs.ContainerEdits, bool, error) {
	if !d.deviceEdits {
		return specs.ContainerEdits{}, false, nil
	}
	if _, err := os.Stat(d.minorsFile); errors.Is(err, fs.ErrNotExist) {
		return specs.ContainerEdits{}, false, nil
	}
	e, ok, err := nvcdiMIGEdits(d.lib, i)
	if err != nil || !ok {
		return e, ok, err
	}
	e, err = d.onHost(e)
	return e, err == nil, err
}

// nvcdiMIGEdits asks nvcdi for the edits of one MIG device by its UUID.
func nvcdiMIGEdits(lib nvcdi.Interface, i Instance) (specs.ContainerEdits, bool, error) {
	devs, err := lib.GetDeviceSpecsByID(migUUID(i.UUID))
	if err != nil {
		return specs.ContainerEdits{}, false, fmt.Errorf("nvcdi device edits for %s: %w", i, err)
	}
	if len(devs) == 0 {
		return specs.ContainerEdits{}, false, fmt.Errorf("nvcdi device edits for %s: no device", i)
	}
	return devs[0].ContainerEdits, true, nil
}

// oneLine folds a multi-line error (nvcdi joins its lookups' errors with
// newlines, each often twice) into one line of distinct parts, so it reaches
// the user as one line; it still wraps err.
func oneLine(err error) error {
	if !strings.Contains(err.Error(), "\n") {
		return err
	}
	var parts []string
	for _, p := range strings.Split(err.Error(), "\n") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	return &lineError{msg: strings.Join(parts, "; "), err: err}
}

type lineError struct {
	msg string
	err error
}

func (e *lineError) Error() string { return e.msg }
func (e *lineError) Unwrap() error { return e.err }

// nvcdiLogger passes nvcdi's messages to logrus. nvcdi warns about every
// optional file a driver may lack (graphics libraries, IPC sockets), so its
// warnings are logged at debug level.
type nvcdiLogger struct{ l logrus.FieldLogger }

func (n nvcdiLogger) Debugf(f string, a ...any)   { n.l.Debugf(f, a...) }
func (n nvcdiLogger) Errorf(f string, a ...any)   { n.l.Errorf(f, a...) }
func (n nvcdiLogger) Infof(f string, a ...any)    { n.l.Debugf(f, a...) }
func (n nvcdiLogger) Warningf(f string, a ...any) { n.l.Debugf(f, a...) }
func (n nvcdiLogger) Tracef(f string, a ...any)   { n.l.Debugf(f, a...) }
