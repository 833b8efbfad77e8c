package record

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu/nvmlgpu"
)

// Source is a second view of the command's memory, polled by the recorder.
type Source interface {
	// Sample returns the bytes the processes in the tree rooted at pid
	// hold, and the used memory of the devices they run on.
	Sample(root int) (proc, device uint64, err error)
	// Describe names the source in the trace's comments.
	Describe() string
	Close() error
}

// NVMLLibrary is the library go-nvml loads.
const NVMLLibrary = "libnvidia-ml.so.1"

// ErrNoNVML is wrapped when the NVML library cannot be loaded.
var ErrNoNVML = errors.New(NVMLLibrary + " not found")

// nvmlSource reads per-process memory from NVML: each GPU's compute
// processes, and on a GPU in MIG mode each MIG device's.
type nvmlSource struct {
	lib nvml.Interface
}

// OpenNVML initialises lib (nvml.New() for the system's library). Nothing
// else is called when Init fails, so a missing library is an error wrapping
// ErrNoNVML, never go-nvml's abort.
func OpenNVML(lib nvml.Interface) (Source, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, fmt.Errorf("NVML: %w", ErrNoNVML)
		}
		return nil, fmt.Errorf("NVML: initialise: %s", nvmlgpu.CodeName(ret))
	}
	return &nvmlSource{lib: lib}, nil
}

func (s *nvmlSource) Describe() string { return "NVML per-process used memory" }

func (s *nvmlSource) Close() error {
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML: shut down: %s", nvmlgpu.CodeName(ret))
	}
	return nil
}

func (s *nvmlSource) Sample(root int) (uint64, uint64, error) {
	count, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return 0, 0, fmt.Errorf("NVML: count GPUs: %s", nvmlgpu.CodeName(ret))
	}
	tree := map[uint32]bool{}
	var proc, dev, all uint64
	matched := false
	for i := 0; i < count; i++ {
		h, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return 0, 0, fmt.Errorf("NVML: GPU %d: %s", i, nvmlgpu.CodeName(ret))
		}
		if m, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
			all += m.Used
		}
		handles := []nvml.Device{h}
		if cur, _, ret := h.GetMigMode(); ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE {
			handles = append(handles, migHandles(h)...)
		}
		for _, d := range handles {
			procs, ret := d.GetComputeRunningProcesses()
			if ret != nvml.SUCCESS {
				continue
			}
			mine := false
			for _, p := range procs {
				if inTree(tree, p.Pid, root) {
					mine = true
					proc += p.UsedGpuMemory
				}
			}
			if mine {
				matched = true
				if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
					dev += m.Used
				}
			}
		}
	}
	if !matched {
		// In a container without the host's pid namespace NVML's pids are
		// the host's and match none of ours: the GPUs' used memory is then
		// all there is to go by.
		dev = all
	}
	return proc, dev, nil
}

func migHandles(h nvml.Device) []nvml.Device {
	n, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil
	}
	var out []nvml.Device
	for i := 0; i < n; i++ {
		if m, ret := h.GetMigDeviceHandleByIndex(i); ret == nvml.SUCCESS {
			out = append(out, m)
		}
	}
	return out
}

// inTree reports whether pid is root or one of its descendants, following
// parent pids in /proc; known answers are kept in memo for one poll.
func inTree(memo map[uint32]bool, pid uint32, root int) bool {
	if v, ok := memo[pid]; ok {
		return v
	}
	p := int(pid)
	for depth := 0; depth < 64 && p > 1; depth++ {
		if p == root {
			memo[pid] = true
			return true
		}
		p = parentPID(p)
	}
	memo[pid] = false
	return false
}

// parentPID reads the fourth field of /proc/<pid>/stat (after the command
// name, which may hold spaces and parentheses); 0 when the process is gone.
func parentPID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	pp, err := strconv.Atoi(f[1])
	if err != nil {
		return 0
	}
	return pp
}
