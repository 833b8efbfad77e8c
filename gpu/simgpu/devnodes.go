package simgpu

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/gpu"
)

// NodeKind says what the simulated device nodes are.
type NodeKind string

const (
	// NodeCharDevice: real character devices on majors no driver owns, so
	// opening them fails (ENXIO) but container runtimes accept them.
	NodeCharDevice NodeKind = "char-device"
	// NodeNullDevice: character devices with /dev/null's numbers, used when
	// the preferred majors belong to a loaded driver (a host with real GPUs).
	NodeNullDevice NodeKind = "null-device"
	// NodeRegularFile: empty files, when mknod is not permitted at all.
	NodeRegularFile NodeKind = "regular-file"
)

// nvidiaMajor is the NVIDIA driver's fixed major; the uvm and caps majors
// are dynamic on hardware, so any major no driver holds will do.
const nvidiaMajor = 195

var spareMajors = []uint32{511, 510, 509, 508, 507, 506}

// Capability minors follow the driver's mig-minors layout: config and
// monitor take 1 and 2, then each GPU has 15 GIs of 9 entries (the GI's
// access plus 8 CIs).
const (
	capConfigMinor  = 1
	capMonitorMinor = 2
	capsPerGI       = 9
	gisPerGPU       = 15
)

func giCapMinor(gpuIndex, giID int) int { return 3 + gpuIndex*gisPerGPU*capsPerGI + giID*capsPerGI }

// devFiles makes the device nodes and capability files under a node's root.
// A nil *devFiles does nothing, for nodes without a root.
type devFiles struct {
	devDir, capsDir         string
	kind                    NodeKind
	gpuMajor, uvmMajor, cap uint32
	log                     logrus.FieldLogger
	state                   *driverState // instance descriptions and usage for the stub user space
}

func newDevFiles(root string, gpus int, log logrus.FieldLogger) (*devFiles, error) {
	f := &devFiles{
		log:     log,
		devDir:  filepath.Join(root, "dev"),
		capsDir: filepath.Join(root, "proc", "driver", "nvidia", "capabilities"),
	}
	for _, dir := range []string{filepath.Join(f.devDir, "nvidia-caps"), filepath.Join(f.capsDir, "mig")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("make simulated driver directory: %w", err)
		}
	}
	used := majorsInUse()
	f.gpuMajor = nvidiaMajor
	spare := make([]uint32, 0, 2)
	for _, m := range spareMajors {
		if !used[m] {
			spare = append(spare, m)
		}
	}
	f.kind = NodeCharDevice
	if used[nvidiaMajor] || len(spare) < 2 {
		// A loaded NVIDIA driver owns 195: a container given "nvidia0"
		// would reach a real GPU, so fall back to harmless numbers.
		f.kind = NodeNullDevice
	} else {
		f.uvmMajor, f.cap = spare[0], spare[1]
	}
	nodes := []struct {
		name         string
		major, minor uint32
	}{
		{"nvidiactl", f.gpuMajor, 255},
		{"nvidia-uvm", f.uvmMajor, 0},
		{"nvidia-uvm-tools", f.uvmMajor, 1},
	}
	for i := 0; i < gpus; i++ {
		nodes = append(nodes, struct {
			name         string
			major, minor uint32
		}{fmt.Sprintf("nvidia%d", i), f.gpuMajor, uint32(i)})
	}
	for _, n := range nodes {
		if err := f.mknod(filepath.Join(f.devDir, n.name), n.major, n.minor); err != nil {
			return nil, err
		}
	}
	st, err := newDriverState(root)
	if err != nil {
		return nil, err
	}
	f.state = st
	if err := f.addCap(filepath.Join(f.capsDir, "mig", "config"), capConfigMinor); err != nil {
		return nil, err
	}
	if err := f.addCap(filepath.Join(f.capsDir, "mig", "monitor"), capMonitorMinor); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *devFiles) paths() gpu.DriverPaths {
	if f == nil {
		return gpu.DriverPaths{}
	}
	return gpu.DriverPaths{DevDir: f.devDir, CapsDir: f.capsDir}
}

// mknod makes one node, downgrading the node kind for the rest of the node
// the first time the kernel refuses.
func (f *devFiles) mknod(path string, major, minor uint32) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replace simulated device node %s: %w", path, err)
	}
	for {
		switch f.kind {
		case NodeCharDevice:
			if unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(major, minor))) == nil {
				return nil
			}
			f.kind = NodeNullDevice
		case NodeNullDevice:
			if unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) == nil {
				return nil
			}
			f.kind = NodeRegularFile
		default:
			if err := os.WriteFile(path, nil, 0o666); err != nil {
				return fmt.Errorf("make simulated device node %s: %w", path, err)
			}
			return nil
		}
	}
}

// addCap writes a capability's access file and its /dev/nvidia-caps node.
func (f *devFiles) addCap(dir string, minor int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make capability directory %s: %w", dir, err)
	}
	body := fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: 256\nDeviceFileModify: 1\n", minor)
	if err := os.WriteFile(filepath.Join(dir, "access"), []byte(body), 0o444); err != nil {
		return fmt.Errorf("write capability file in %s: %w", dir, err)
	}
	return f.mknod(filepath.Join(f.devDir, "nvidia-caps", fmt.Sprintf("nvidia-cap%d", minor)), f.cap, uint32(minor))
}

func (f *devFiles) removeCap(dir string, minor int) {
	for _, p := range []string{
		filepath.Join(f.devDir, "nvidia-caps", fmt.Sprintf("nvidia-cap%d", minor)),
		filepath.Join(dir, "access"),
		dir,
	} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			f.log.WithError(err).WithField("path", p).Warn("simulated driver could not remove a capability file")
		}
	}
}

func (f *devFiles) giDir(gi *giState) string {
	return filepath.Join(f.capsDir, fmt.Sprintf("gpu%d", gi.g.index), "mig", fmt.Sprintf("gi%d", gi.id))
}

func (f *devFiles) ciDir(ci *ciState) string {
	return filepath.Join(f.giDir(ci.gi), fmt.Sprintf("ci%d", ci.id))
}

// The add/remove hooks run inside a driver operation that has already
// succeeded; a file-system hiccup must not undo it, so they only warn.

func (f *devFiles) addGI(gi *giState) {
	if f == nil {
		return
	}
	if err := f.addCap(f.giDir(gi), gi.capMinor); err != nil {
		f.log.WithError(err).WithField("gpu", gi.g.index).Warn("simulated driver could not publish a GPU instance's capability")
	}
}

func (f *devFiles) addCI(ci *ciState) {
	if f == nil {
		return
	}
	if err := f.addCap(f.ciDir(ci), ci.capMinor); err != nil {
		f.log.WithError(err).WithField("gpu", ci.gi.g.index).Warn("simulated driver could not publish a compute instance's capability")
	}
	if err := f.state.addCI(ci); err != nil {
		f.log.WithError(err).WithField("gpu", ci.gi.g.index).Warn("simulated driver could not describe a compute instance for its user space")
	}
}

func (f *devFiles) removeCI(ci *ciState) {
	if f != nil {
		f.removeCap(f.ciDir(ci), ci.capMinor)
		f.state.removeCI(ci)
	}
}

// usedBytes is what processes hold on a MIG device through the stub libcuda.
func (f *devFiles) usedBytes(uuid string) uint64 {
	if f == nil {
		return 0
	}
	return f.state.usedBytes(uuid)
}

func (f *devFiles) removeGI(gi *giState) {
	if f != nil {
		f.removeCap(f.giDir(gi), gi.capMinor)
	}
}

// majorsInUse reads the character-device majors the kernel has registered.
func majorsInUse() map[uint32]bool {
	used := map[uint32]bool{}
	fh, err := os.Open("/proc/devices")
	if err != nil {
		return used
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	inChar := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "Character devices:":
			inChar = true
		case line == "Block devices:":
			inChar = false
		case inChar:
			fields := strings.Fields(line)
			if len(fields) == 2 {
				if n, err := strconv.ParseUint(fields[0], 10, 32); err == nil {
					used[uint32(n)] = true
				}
			}
		}
	}
	return used
}

// pruneStale removes capability files of instances g does not hold: ones a
// crash left between publishing an instance and saving it. Files of held
// instances stay.
func (f *devFiles) pruneStale(g *gpuState) {
	if f == nil {
		return
	}
	migDir := filepath.Join(f.capsDir, fmt.Sprintf("gpu%d", g.index), "mig")
	entries, err := os.ReadDir(migDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		giID, ok := capDirID(e.Name(), "gi")
		if !ok {
			continue
		}
		gi := g.gis[giID]
		giDir := filepath.Join(migDir, e.Name())
		if cis, err := os.ReadDir(giDir); err == nil {
			for _, c := range cis {
				ciID, ok := capDirID(c.Name(), "ci")
				if !ok || (gi != nil && gi.cis[ciID] != nil) {
					continue
				}
				f.removeCap(filepath.Join(giDir, c.Name()), giCapMinor(g.index, giID)+1+ciID)
			}
		}
		if gi == nil {
			f.removeCap(giDir, giCapMinor(g.index, giID))
		}
	}
}

// capDirID parses "gi3" or "ci0".
func capDirID(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(rest)
	return id, err == nil && id >= 0
}
