package agent

import (
	"path/filepath"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/migpro/migpro/cdi"
	"github.com/migpro/migpro/gpu/simgpu"
)

// cdiDriver makes the driver's part of the CDI specs (see docs/cdi.md) from
// the agent's own NVML: the simulated one when simulating, the real one
// otherwise. Without a usable driver (no libraries for the NVML-reported
// version under the driver root, or no NVML), it warns and returns nil: the
// specs then carry the device nodes only, and a container needs its image
// to bring the driver's libraries.
func (a *Agent) cdiDriver() cdi.Driver {
	driverRoot, devRoot := a.cfg.DriverRoot, a.cfg.DevRoot
	var lib nvml.Interface
	deviceEdits := false
	if a.sim != nil {
		lib = a.sim.Lib()
		if driverRoot == "" {
			driverRoot = a.cfg.SimRoot
		}
		if devRoot == "" {
			devRoot = filepath.Dir(a.node.Paths().DevDir)
		}
	} else {
		lib = nvml.New()
		// nvcdi's MIG device edits need the driver's MIG minors file, which
		// only a real driver has.
		deviceEdits = true
	}
	if driverRoot == "" {
		driverRoot = cdi.DefaultDriverRoot
	}
	log := a.log.WithField("driver_root", driverRoot)
	d, err := cdi.NewNVIDIADriver(lib, cdi.WithDriverRoot(driverRoot), cdi.WithDevRoot(devRoot),
		cdi.WithHostDriverRoot(a.cfg.HostDriverRoot), cdi.WithHookPath(a.cfg.NVIDIACDIHookPath), cdi.WithDeviceEdits(deviceEdits),
		cdi.WithDriverLogger(a.log))
	if err == nil {
		_, err = d.CommonEdits()
	}
	if err != nil {
		log.WithError(err).Warn("no NVIDIA driver user space for the CDI specs: they carry the device nodes only")
		return nil
	}
	log.WithField("driver_version", d.Version()).Info("CDI specs carry the NVIDIA driver")
	return d
}

// simDriverEdits give a container the simulated driver's state directory,
// read-write: the stub libcuda and nvidia-smi find their instance there and
// report their allocations through it, as a real driver's user space talks
// to the kernel driver.
func simDriverEdits(simRoot string) specs.ContainerEdits {
	return specs.ContainerEdits{Mounts: []*specs.Mount{{
		HostPath:      filepath.Join(simRoot, simgpu.StateDirName),
		ContainerPath: simgpu.ContainerStateDir,
		Options:       []string{"rbind", "rw", "nosuid", "nodev"},
	}}}
}
