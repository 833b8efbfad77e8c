package agent

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/cdi"
	"github.com/migpro/migpro/gpu"
)

// driverRoot is where the driver's libraries and binaries are found:
// DriverRoot, else the node's own (the simulated root when simulating),
// else /.
func (a *Agent) driverRoot() string {
	switch {
	case a.cfg.DriverRoot != "":
		return a.cfg.DriverRoot
	case a.gpu.DriverRoot != "":
		return a.gpu.DriverRoot
	default:
		return cdi.DefaultDriverRoot
	}
}

// devRoot is the directory holding dev/ with the driver's device nodes:
// DevRoot, else the node's own (when simulating), else the driver root.
func (a *Agent) devRoot() string {
	if a.cfg.DevRoot != "" {
		return a.cfg.DevRoot
	}
	if a.gpu.DevRoot != "" {
		return a.gpu.DevRoot
	}
	return a.driverRoot()
}

// specPaths are the node's driver paths for the specs' device nodes, with
// the device nodes under DevRoot when it is set, so every node in a spec,
// the driver's and the instance's own, comes from the same dev root.
func (a *Agent) specPaths() gpu.DriverPaths {
	p := a.node.Paths()
	if a.cfg.DevRoot != "" {
		p.DevDir = filepath.Join(a.cfg.DevRoot, "dev")
	}
	return p
}

// NoCDIHook as --nvidia-cdi-hook-path leaves NVIDIA's hooks out of the
// specs on purpose.
const NoCDIHook = "none"

// CDIHookStatus is what the agent found of nvidia-cdi-hook at start.
type CDIHookStatus struct {
	// Use is true when the specs call the hook.
	Use bool
	// Message says in one line what is missing and what to do; empty when
	// the hook is there or left out on purpose.
	Message string
}

// ResolveCDIHook checks that the nvidia-cdi-hook the specs would name
// exists. A spec naming a missing hook makes every container with a migpro
// device fail to start (the runtime cannot exec the hook), so when it is
// missing the specs leave NVIDIA's hooks out instead: containers start, and
// lack only the hooks' work (the driver libraries' .so links, the ldcache
// update, the CUDA compat libraries). The simulated driver needs none of it.
func ResolveCDIHook(cfg Config) CDIHookStatus {
	path := cfg.NVIDIACDIHookPath
	if path == "" {
		path = cdi.DefaultNVIDIACDIHookPath
	}
	if path == NoCDIHook {
		return CDIHookStatus{}
	}
	check := cfg.NVIDIACDIHookCheck
	if check == "" {
		check = path
	}
	fi, err := os.Stat(check)
	if err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return CDIHookStatus{Use: true}
	}
	if cfg.Simulate != "" {
		return CDIHookStatus{Message: fmt.Sprintf("nvidia-cdi-hook not found at %s: the simulated driver's CDI specs leave NVIDIA's hooks out (it needs none)", check)}
	}
	return CDIHookStatus{Message: fmt.Sprintf("nvidia-cdi-hook not found at %s: CDI specs leave NVIDIA's hooks out, so containers start without the driver libraries' links and ldcache update; "+
		"install NVIDIA's container toolkit (package nvidia-container-toolkit-base) or set --nvidia-cdi-hook-path to the hook (--nvidia-cdi-hook-path=%s: leave the hooks out without this warning)", check, NoCDIHook)}
}

// cdiDriver makes the driver's part of the CDI specs (see docs/cdi.md) from
// the agent's own NVML: the simulated one when simulating, the real one
// otherwise.
//
// Without a usable driver (no libraries for the NVML-reported version under
// the driver root, or no NVML) the specs cannot carry it. If specs on disk
// carry it from an earlier run, the agent refuses to start: rewriting them
// without the driver would leave every new container on the node without
// libcuda, while the specs as they are keep naming the driver that was
// there. Otherwise it logs one error and returns nil: the specs carry the
// device nodes only, and containers need the driver from elsewhere (their
// image, or NVIDIA's runtime).
func (a *Agent) cdiDriver() (cdi.Driver, error) {
	lib := a.gpu.NVML
	deviceEdits := false
	if lib == nil {
		lib = nvml.New()
		// nvcdi's MIG device edits need the driver's MIG minors file, which
		// only a real driver has.
		deviceEdits = true
	}
	driverRoot := a.driverRoot()
	log := a.log.WithField("driver_root", driverRoot)
	opts := []cdi.DriverOption{cdi.WithDriverRoot(driverRoot), cdi.WithDevRoot(a.devRoot()),
		cdi.WithHostDriverRoot(a.cfg.HostDriverRoot), cdi.WithHookPath(a.cfg.NVIDIACDIHookPath), cdi.WithDeviceEdits(deviceEdits),
		cdi.WithDriverLogger(a.log)}
	if hook := ResolveCDIHook(a.cfg); !hook.Use {
		opts = append(opts, cdi.WithoutHooks())
		switch {
		case hook.Message == "":
		case a.cfg.Simulate != "":
			log.Info(hook.Message)
		default:
			log.Warn(hook.Message)
		}
	}
	d, err := cdi.NewNVIDIADriver(lib, opts...)
	if err == nil {
		_, err = d.CommonEdits()
	}
	if err == nil {
		log.WithField("driver_version", d.Version()).Info("CDI specs carry the NVIDIA driver")
		return d, nil
	}
	carrying, lerr := a.specsCarryingDriver()
	if lerr != nil {
		return nil, fmt.Errorf("CDI specs: no NVIDIA driver under driver root %s (%w), and the specs on disk cannot be checked for one: %w", driverRoot, err, lerr)
	}
	if carrying > 0 {
		return nil, fmt.Errorf("CDI specs: no NVIDIA driver under driver root %s (%w), but %d spec(s) in %s carry one: refusing to start rather than rewrite them without it; install the driver, fix --driver-root, or remove those specs to run without the driver",
			driverRoot, err, carrying, a.cfg.CDISpecDir)
	}
	msg := "CDI specs will carry no NVIDIA driver (device nodes only): containers get no libcuda or nvidia-smi from migpro"
	if a.gpu.NoDriverHint != "" {
		msg += "; " + a.gpu.NoDriverHint
	}
	log.WithError(err).Error(msg)
	return nil, nil
}

// specsCarryingDriver counts the specs of the agent's kind on disk that
// carry the driver's edits.
func (a *Agent) specsCarryingDriver() (int, error) {
	w, err := cdi.NewWriter(cdi.WithSpecDir(a.cfg.CDISpecDir), cdi.WithKind(a.cfg.CDIKind), cdi.WithLogger(a.log))
	if err != nil {
		return 0, err
	}
	files, err := w.List()
	n := 0
	for _, f := range files {
		if f.Driver {
			n++
		}
	}
	return n, err
}
