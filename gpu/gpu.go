package gpu

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Placement is a position on a GPU in memory-slot units, exactly as NVML's
// GetGpuInstancePossiblePlacements reports it.
type Placement struct {
	Start int `json:"start"`
	Size  int `json:"size"`
}

// End is the first slot after the placement.
func (p Placement) End() int { return p.Start + p.Size }

// Overlaps reports whether two placements share a memory slot.
func (p Placement) Overlaps(q Placement) bool { return p.Start < q.End() && q.Start < p.End() }

func (p Placement) String() string { return fmt.Sprintf("%d:%d", p.Start, p.Size) }

// Profile is one GPU-instance profile a device offers, read from NVML at runtime.
type Profile struct {
	// ID is NVML's GPU-instance profile id (GPU_INSTANCE_PROFILE_*).
	ID int `json:"id"`
	// Name is the canonical MIG name, e.g. "1g.5gb" or "1g.10gb+me".
	Name string `json:"name"`
	// Slices is the number of compute slices (the "Ng" of the name).
	Slices int `json:"slices"`
	// MemoryMiB is the instance's memory as NVML reports it.
	MemoryMiB uint64 `json:"memoryMiB"`
	// MaxCount is how many instances of this profile the GPU can hold at once.
	MaxCount int `json:"maxCount"`
	// Placements lists every legal placement, whatever is occupied.
	Placements []Placement `json:"placements"`
}

// SortInstances orders instances by placement start, then GI id: the order
// a device lists them in.
func SortInstances(in []Instance) {
	sort.Slice(in, func(i, j int) bool {
		if in[i].Placement.Start != in[j].Placement.Start {
			return in[i].Placement.Start < in[j].Placement.Start
		}
		return in[i].GIID < in[j].GIID
	})
}

// SortProfiles orders profiles by compute slices, then memory, then id, so
// listings read from the smallest instance up and are stable.
func SortProfiles(ps []Profile) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Slices != b.Slices {
			return a.Slices < b.Slices
		}
		if a.MemoryMiB != b.MemoryMiB {
			return a.MemoryMiB < b.MemoryMiB
		}
		return a.ID < b.ID
	})
}

// Instance is a GPU instance and, once made, its single full-size compute instance.
type Instance struct {
	GPU       int       `json:"gpu"`
	GIID      int       `json:"gi"`
	CIID      int       `json:"ci"` // NoComputeInstance while the GI is half-made
	ProfileID int       `json:"profileId"`
	Placement Placement `json:"placement"`
	UUID      string    `json:"uuid,omitempty"` // "MIG-…"; empty without a compute instance
}

// NoComputeInstance marks a GPU instance that has no compute instance yet.
const NoComputeInstance = -1

// Complete reports whether the instance is usable: a GI with its CI.
func (i Instance) Complete() bool { return i.CIID != NoComputeInstance && i.UUID != "" }

// MemoryInfo is an instance's (or a device's) framebuffer use in bytes.
type MemoryInfo struct {
	Used  uint64 `json:"used"`
	Total uint64 `json:"total"`
}

// Process is a process running on an instance.
type Process struct {
	PID       uint32 `json:"pid"`
	UsedBytes uint64 `json:"usedBytes"`
}

// XidEvent is a driver error event. GIID and CIID are -1 when the event is
// not attributed to one instance.
type XidEvent struct {
	GPU  int       `json:"gpu"`
	GIID int       `json:"gi"`
	CIID int       `json:"ci"`
	Xid  uint64    `json:"xid"`
	At   time.Time `json:"at"`
}

// Device is one physical GPU, as migpro needs it from NVML. Calls on one Device
// must be serialised by the caller: the driver serialises MIG reconfiguration
// anyway, and the partitioner's executor holds a per-GPU lock.
type Device interface {
	Index() int
	// Model is the product name NVML reports, e.g. "NVIDIA A100-SXM4-40GB".
	Model() string
	UUID() string
	// Minor is the device's minor number, for /dev/nvidia<Minor>.
	Minor() int
	// Memory is the whole device's framebuffer.
	Memory() (MemoryInfo, error)
	MIGEnabled() (bool, error)
	// Profiles lists every GPU-instance profile the device supports.
	Profiles() ([]Profile, error)

	// CreateGPUInstance makes a GI of profileID at a placement and returns its id.
	CreateGPUInstance(profileID int, at Placement) (giID int, err error)
	// CreateComputeInstance makes the GI's single full-size CI.
	CreateComputeInstance(giID int) (Instance, error)
	DestroyComputeInstance(giID int) error
	DestroyGPUInstance(giID int) error
	// Instances lists every GI on the device, including half-made ones.
	Instances() ([]Instance, error)

	InstanceMemory(giID int) (MemoryInfo, error)
	InstanceProcesses(giID int) ([]Process, error)
}

// Node is every GPU on the machine plus the node-wide driver facilities.
type Node interface {
	Devices() []Device
	// WatchXids delivers Xid events until ctx ends.
	WatchXids(ctx context.Context) (<-chan XidEvent, error)
	// Paths says where the driver's device nodes and capability files live.
	Paths() DriverPaths
	Close() error
}

// DriverPaths locates the device nodes and MIG capability files. On a real
// node they are /dev and /proc/driver/nvidia/capabilities; the simulated node
// keeps its own under a directory of its own.
type DriverPaths struct {
	// DevDir holds nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia<N> and nvidia-caps/.
	DevDir string `json:"devDir"`
	// CapsDir holds gpu<N>/mig/gi<G>/access and gpu<N>/mig/gi<G>/ci<C>/access,
	// each with a "DeviceFileMinor: M" line.
	CapsDir string `json:"capsDir"`
}
