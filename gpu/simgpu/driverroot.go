package simgpu

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/gpu/nvmlgpu"
)

// DriverVersion is the version the simulated driver reports and installs its
// libraries under (libcuda.so.<DriverVersion>); the stubs in driver/ carry
// the same figures (simstate.h).
const DriverVersion = "550.127.05"

// CUDADriverVersion is what cuDriverGetVersion and NVML's
// SystemGetCudaDriverVersion report: CUDA 12.4, as 550-series drivers do.
const CUDADriverVersion = 12040

// StateDirName is the simulated driver's run-time state under a node's root
// (<root>/run/migpro-simgpu): instance descriptions and usage files the stub
// libcuda and nvidia-smi read and write. Containers see it at
// ContainerStateDir.
const StateDirName = "run/migpro-simgpu"

// ContainerStateDir is where the stubs look for the state directory unless
// MIGPRO_SIMGPU_STATE says otherwise.
const ContainerStateDir = "/run/migpro-simgpu"

// LibDir is where a Debian-family driver install puts its libraries, relative
// to the driver root.
const LibDir = "usr/lib/x86_64-linux-gnu"

func (l *simLib) SystemGetDriverVersion() (string, nvml.Return) { return l.d.version, nvml.SUCCESS }

func (l *simLib) SystemGetCudaDriverVersion() (int, nvml.Return) {
	return CUDADriverVersion, nvml.SUCCESS
}

func (l *simLib) SystemGetCudaDriverVersion_v2() (int, nvml.Return) {
	return CUDADriverVersion, nvml.SUCCESS
}

// StubFiles are the files `make simdriver` builds into a stub directory
// (bin/simdriver), the input of InstallDriverRoot.
var StubFiles = []string{"libcuda.so", "libnvidia-ml.so", "nvidia-smi"}

// InstallDriverRoot lays out, under root, the files a driver install
// provides for DriverVersion, from the stubs `make simdriver` builds into
// stubDir. See InstallDriver.
func InstallDriverRoot(root, stubDir string) error {
	return InstallDriver(root, stubDir, DriverVersion)
}

// InstallDriver lays out, under root, the files a driver install of version
// provides, from the stubs in stubDir (StubFiles):
//
//	<root>/usr/lib/x86_64-linux-gnu/libcuda.so.<version>      (+ libcuda.so.1, libcuda.so links)
//	<root>/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<version> (+ libnvidia-ml.so.1, libnvidia-ml.so)
//	<root>/usr/bin/nvidia-smi
//	<root>/lib/firmware/nvidia/<version>/gsp_ga10x.bin, gsp_tu10x.bin (empty)
//
// It may be run again over an existing root (files are replaced). Another
// version's libraries and firmware are removed, as a driver upgrade removes
// them. All stubs are checked before anything is written.
func InstallDriver(root, stubDir, version string) error {
	if version == "" || strings.ContainsAny(version, "/ ") {
		return fmt.Errorf("install simulated driver root: bad driver version %q", version)
	}
	for _, f := range StubFiles {
		if fi, err := os.Stat(filepath.Join(stubDir, f)); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("install simulated driver root: stub %s missing in %s (build the stubs with `make simdriver`)", f, stubDir)
		}
	}
	libDir := filepath.Join(root, LibDir)
	fwRoot := filepath.Join(root, "lib", "firmware", "nvidia")
	fwDir := filepath.Join(fwRoot, version)
	for _, d := range []string{libDir, filepath.Join(root, "usr", "bin"), fwDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("install simulated driver root: %w", err)
		}
	}
	if err := removeOtherVersions(libDir, fwRoot, version); err != nil {
		return err
	}
	for _, lib := range []string{"libcuda", "libnvidia-ml"} {
		full := lib + ".so." + version
		if err := copyFile(filepath.Join(stubDir, lib+".so"), filepath.Join(libDir, full), 0o755); err != nil {
			return err
		}
		for _, link := range []string{lib + ".so.1", lib + ".so"} {
			target := full
			if link == lib+".so" {
				target = lib + ".so.1"
			}
			p := filepath.Join(libDir, link)
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("install simulated driver root: %w", err)
			}
			if err := os.Symlink(target, p); err != nil {
				return fmt.Errorf("install simulated driver root: %w", err)
			}
		}
	}
	if err := copyFile(filepath.Join(stubDir, "nvidia-smi"), filepath.Join(root, "usr", "bin", "nvidia-smi"), 0o755); err != nil {
		return err
	}
	for _, fw := range []string{"gsp_ga10x.bin", "gsp_tu10x.bin"} {
		if err := os.WriteFile(filepath.Join(fwDir, fw), nil, 0o644); err != nil {
			return fmt.Errorf("install simulated driver root: %w", err)
		}
	}
	return nil
}

// removeOtherVersions removes the libraries and firmware of driver versions
// other than version.
func removeOtherVersions(libDir, fwRoot, version string) error {
	for _, lib := range []string{"libcuda.so.", "libnvidia-ml.so."} {
		matches, _ := filepath.Glob(filepath.Join(libDir, lib+"*"))
		for _, m := range matches {
			v := strings.TrimPrefix(filepath.Base(m), lib)
			if v == version || v == "1" || strings.HasSuffix(v, ".tmp") {
				continue
			}
			if err := os.Remove(m); err != nil {
				return fmt.Errorf("install simulated driver root: remove driver %s: %w", v, err)
			}
		}
	}
	entries, _ := os.ReadDir(fwRoot)
	for _, e := range entries {
		if e.IsDir() && e.Name() != version {
			if err := os.RemoveAll(filepath.Join(fwRoot, e.Name())); err != nil {
				return fmt.Errorf("install simulated driver root: remove firmware %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("install simulated driver root: %w (build the stubs with `make simdriver`)", err)
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("install simulated driver root: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("install simulated driver root: copy %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("install simulated driver root: %w", err)
	}
	// Renamed over, not written in place: a process may have the old copy mapped.
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("install simulated driver root: %w", err)
	}
	return nil
}

// driverState is the run-time state directory under a node's root. A nil
// *driverState does nothing, for nodes without a root.
type driverState struct {
	dir string
}

func newDriverState(root string) (*driverState, error) {
	s := &driverState{dir: filepath.Join(root, StateDirName)}
	for _, d := range []string{s.instancesDir(), s.usageRoot()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("make simulated driver state directory: %w", err)
		}
	}
	// Containers' processes (any uid) create their usage files here.
	if err := os.Chmod(s.usageRoot(), 0o1777); err != nil {
		return nil, fmt.Errorf("make simulated driver state directory: %w", err)
	}
	// A fresh driver holds no instances; a loaded state file publishes its own.
	entries, _ := os.ReadDir(s.instancesDir())
	for _, e := range entries {
		_ = os.Remove(filepath.Join(s.instancesDir(), e.Name()))
	}
	return s, nil
}

func (s *driverState) instancesDir() string { return filepath.Join(s.dir, "instances") }
func (s *driverState) usageRoot() string    { return filepath.Join(s.dir, "usage") }

// describe is the instance file the stubs read (simstate.c's read_instance).
func describe(ci *ciState) string {
	g := ci.gi.g
	profile, err := nvmlgpu.ProfileName(int(ci.gi.info.Id), int(ci.gi.info.SliceCount), ci.gi.info.MemorySizeMB, g.model.deviceMemBytes())
	if err != nil {
		profile = fmt.Sprintf("%dg", ci.gi.info.SliceCount)
	}
	lines := []string{
		"uuid=" + ci.uuid,
		"gpu_uuid=" + g.uuid,
		"gpu_name=" + strings.TrimPrefix(g.model.cfg.Name, "Mock "),
		"profile=" + profile,
		"driver_version=" + g.d.version,
		fmt.Sprintf("gpu_index=%d", g.index),
		fmt.Sprintf("gi=%d", ci.gi.id),
		fmt.Sprintf("ci=%d", ci.id),
		fmt.Sprintf("sm_count=%d", ci.info.MultiprocessorCount),
		fmt.Sprintf("cc_major=%d", g.model.cfg.CudaMajor),
		fmt.Sprintf("cc_minor=%d", g.model.cfg.CudaMinor),
		fmt.Sprintf("memory_total=%d", ci.gi.info.MemorySizeMB*mib),
	}
	return strings.Join(lines, "\n") + "\n"
}

func (s *driverState) addCI(ci *ciState) error {
	if s == nil {
		return nil
	}
	p := filepath.Join(s.instancesDir(), ci.uuid)
	if err := os.WriteFile(p+".tmp", []byte(describe(ci)), 0o644); err != nil {
		return fmt.Errorf("publish instance %s: %w", ci.uuid, err)
	}
	return os.Rename(p+".tmp", p)
}

func (s *driverState) removeCI(ci *ciState) {
	if s == nil {
		return
	}
	_ = os.Remove(filepath.Join(s.instancesDir(), ci.uuid))
	// Usage files of processes still running stay: their bytes stay counted
	// until they exit, as they would on a GPU the instance was torn from.
}

// usedBytes sums the usage files of the live processes on a MIG device (see
// driver/simstate.c): a file whose owner no longer holds its shared flock
// belongs to an exited process, whose memory the driver has freed, and is
// removed.
func (s *driverState) usedBytes(uuid string) uint64 {
	if s == nil {
		return 0
	}
	dir := filepath.Join(s.usageRoot(), uuid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum uint64
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "p-") {
			continue
		}
		sum += readUsage(filepath.Join(dir, e.Name()))
	}
	return sum
}

func readUsage(path string) uint64 {
	fh, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer fh.Close()
	fd := int(fh.Fd())
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
		_ = os.Remove(path) // the process is gone
		return 0
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: 0, Len: 8}
	if err := unix.FcntlFlock(fh.Fd(), unix.F_OFD_SETLKW, &lk); err != nil {
		return 0
	}
	var b [8]byte
	n, _ := fh.ReadAt(b[:], 0)
	lk.Type = unix.F_UNLCK
	_ = unix.FcntlFlock(fh.Fd(), unix.F_OFD_SETLK, &lk)
	if n != 8 {
		return 0
	}
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}
