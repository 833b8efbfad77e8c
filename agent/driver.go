package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/nvmlgpu"
)

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
func (a *Agent) openNVML() (gpu.Node, error) {
	var opts []nvml.LibraryOption
	// Unset or "/" keeps the dynamic loader's own search (ld.so.conf).
	if a.cfg.DriverRoot != "" && a.cfg.DriverRoot != "/" {
		lib, err := findNVML(a.cfg.DriverRoot)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nvml.WithLibraryPath(lib))
	}
	if _, err := os.Stat(a.cfg.CapsDir); errors.Is(err, os.ErrNotExist) {
		a.log.WithField("caps_dir", a.cfg.CapsDir).Warn("MIG capability directory missing: CDI specs cannot be written until it is there (set --nvidia-capabilities-dir)")
	}
	paths := nvmlgpu.DefaultPaths
	paths.CapsDir = a.cfg.CapsDir
	n, err := nvmlgpu.New(nvml.New(opts...), nvmlgpu.WithPaths(paths), nvmlgpu.WithLogger(a.log))
	if err != nil {
		return nil, err
	}
	return n, nil
}
