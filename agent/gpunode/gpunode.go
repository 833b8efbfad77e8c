package gpunode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/sirupsen/logrus"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/nvmlgpu"
	"github.com/migpro/migpro/gpu/simgpu"
)

// Open opens the node cfg describes: simulated GPUs when cfg.Simulate is set
// (under cfg.SimRoot, with the simulated driver's stubs from cfg.SimDriver
// installed under the driver root), else the real driver's NVML (from
// cfg.DriverRoot when set). The caller closes the node once the agent's Run
// has returned.
func Open(cfg agent.Config, log logrus.FieldLogger) (agent.GPU, error) {
	if log == nil {
		return agent.GPU{}, errors.New("open GPU node: no logger")
	}
	cfg = cfg.Defaults()
	if cfg.Simulate == "" {
		n, err := openNVML(cfg, log)
		if err != nil {
			return agent.GPU{}, err
		}
		return agent.GPU{Node: n}, nil
	}
	return openSimulated(cfg, log)
}

// openSimulated makes the simulated node and lays its driver out.
func openSimulated(cfg agent.Config, log logrus.FieldLogger) (agent.GPU, error) {
	if err := os.MkdirAll(cfg.SimRoot, 0o755); err != nil {
		return agent.GPU{}, fmt.Errorf("simulated GPUs: %w", err)
	}
	version := cfg.SimDriverVersion
	if version == "" {
		version = simgpu.DriverVersion
	}
	n, err := simgpu.NewNode(cfg.Simulate, simgpu.WithSeed(cfg.Seed), simgpu.WithRoot(cfg.SimRoot),
		simgpu.WithStateFile(filepath.Join(cfg.SimRoot, "driver-state.json")), simgpu.WithDriverVersion(version), simgpu.WithLogger(log))
	if err != nil {
		return agent.GPU{}, fmt.Errorf("simulated GPUs: %w", err)
	}
	g := agent.GPU{Node: n, NVML: n.Lib(), DriverRoot: cfg.SimRoot, DevRoot: filepath.Dir(n.Paths().DevDir)}
	driverRoot := cfg.DriverRoot
	if driverRoot == "" {
		driverRoot = cfg.SimRoot
	}
	if cfg.SimDriver == "" {
		g.NoDriverHint = "no simulated driver was installed (build the stubs with `make simdriver`, or pass --sim-driver DIR)"
	} else if err := simgpu.InstallDriver(driverRoot, cfg.SimDriver, version); err != nil {
		_ = n.Close()
		return agent.GPU{}, fmt.Errorf("simulated driver: %w", err)
	} else {
		log.WithFields(logrus.Fields{"driver_root": driverRoot, "driver_version": version, "stubs": cfg.SimDriver}).
			Info("simulated driver installed")
	}
	edits := driverEdits(cfg.SimRoot)
	g.DriverEdits = &edits
	return g, nil
}

// driverEdits give a container the simulated driver's state directory,
// read-write: the stub libcuda and nvidia-smi find their instance there and
// report their allocations through it, as a real driver's user space talks
// to the kernel driver.
func driverEdits(simRoot string) specs.ContainerEdits {
	return specs.ContainerEdits{Mounts: []*specs.Mount{{
		HostPath:      filepath.Join(simRoot, simgpu.StateDirName),
		ContainerPath: simgpu.ContainerStateDir,
		Options:       []string{"rbind", "rw", "nosuid", "nodev"},
	}}}
}

// nvmlLibrary is the file the driver installs and NVML loads.
const nvmlLibrary = "libnvidia-ml.so.1"

// libraryDirs are where distributions and the driver's installer put
// libnvidia-ml, relative to the driver root.
var libraryDirs = []string{
	"usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib",
	"lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", "lib64", "lib",
}

// findNVML finds libnvidia-ml.so.1 under a driver root.
func findNVML(root string) (string, error) {
	for _, d := range libraryDirs {
		p := filepath.Join(root, d, nvmlLibrary)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("driver root %s: no %s in %v: %w", root, nvmlLibrary, libraryDirs, gpu.ErrNoLibrary)
}

// openNVML opens the real driver: from DriverRoot when set, else by
// library name, reading MIG capabilities from CapsDir.
func openNVML(cfg agent.Config, log logrus.FieldLogger) (gpu.Node, error) {
	var opts []nvml.LibraryOption
	// Unset or "/" keeps the dynamic loader's own search (ld.so.conf).
	if cfg.DriverRoot != "" && cfg.DriverRoot != "/" {
		lib, err := findNVML(cfg.DriverRoot)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nvml.WithLibraryPath(lib))
	}
	if _, err := os.Stat(cfg.CapsDir); errors.Is(err, os.ErrNotExist) {
		log.WithField("caps_dir", cfg.CapsDir).Warn("MIG capability directory missing: CDI specs cannot be written until it is there (set --nvidia-capabilities-dir)")
	}
	paths := nvmlgpu.DefaultPaths
	paths.CapsDir = cfg.CapsDir
	return nvmlgpu.New(nvml.New(opts...), nvmlgpu.WithPaths(paths), nvmlgpu.WithLogger(log))
}
