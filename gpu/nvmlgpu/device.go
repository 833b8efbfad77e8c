package nvmlgpu

import (
	"fmt"
	"sort"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu"
)

// Device is one physical GPU, behind gpu.Device.
type Device struct {
	index  int
	lib    nvml.Interface
	handle nvml.Device
	name   string
	uuid   string
	minor  int

	// The profile table never changes while the driver is loaded, so it is
	// read once (when MIG mode is on) and reused for every create and list.
	mu       sync.Mutex
	profiles []gpu.Profile
	infos    map[int]nvml.GpuInstanceProfileInfo
	// ciByGI caches each GI profile's compute profiles, which are as fixed
	// as the GI profiles and would otherwise cost nine calls per listed GI.
	ciByGI map[uint32][]nvml.ComputeInstanceProfileInfo
}

var _ gpu.Device = (*Device)(nil)

func newDevice(i int, lib nvml.Interface) (*Device, error) {
	h, ret := lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return nil, driverError(fmt.Sprintf("get handle of GPU %d", i), ret)
	}
	d := &Device{index: i, lib: lib, handle: h}
	if d.name, ret = h.GetName(); ret != nvml.SUCCESS {
		return nil, driverError(fmt.Sprintf("read name of GPU %d", i), ret)
	}
	if d.uuid, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return nil, driverError(fmt.Sprintf("read UUID of GPU %d", i), ret)
	}
	if d.minor, ret = h.GetMinorNumber(); ret != nvml.SUCCESS {
		return nil, driverError(fmt.Sprintf("read minor number of GPU %d", i), ret)
	}
	return d, nil
}

// Index is the NVML device index.
func (d *Device) Index() int { return d.index }

// Model is the product name, e.g. "NVIDIA A100-SXM4-40GB".
func (d *Device) Model() string { return d.name }

// UUID is the GPU's "GPU-…" UUID.
func (d *Device) UUID() string { return d.uuid }

// Minor is the minor number of /dev/nvidia<Minor>.
func (d *Device) Minor() int { return d.minor }

// Memory is the whole device's framebuffer.
func (d *Device) Memory() (gpu.MemoryInfo, error) {
	m, ret := d.handle.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return gpu.MemoryInfo{}, driverError(fmt.Sprintf("read memory of GPU %d", d.index), ret)
	}
	return gpu.MemoryInfo{Used: m.Used, Total: m.Total}, nil
}

// MIGEnabled reports the current (not pending) MIG mode.
func (d *Device) MIGEnabled() (bool, error) {
	current, _, ret := d.handle.GetMigMode()
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return false, nil
	}
	if ret != nvml.SUCCESS {
		return false, driverError(fmt.Sprintf("read MIG mode of GPU %d", d.index), ret)
	}
	return current == nvml.DEVICE_MIG_ENABLE, nil
}

// Profiles lists every GPU-instance profile the device supports, sorted by
// compute slices, then memory, then profile id.
func (d *Device) Profiles() ([]gpu.Profile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.loadProfilesLocked(); err != nil {
		return nil, err
	}
	return cloneProfiles(d.profiles), nil
}

func (d *Device) loadProfilesLocked() error {
	if d.profiles != nil {
		return nil
	}
	mem, ret := d.handle.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return driverError(fmt.Sprintf("read memory of GPU %d", d.index), ret)
	}
	infos := map[int]nvml.GpuInstanceProfileInfo{}
	var profiles []gpu.Profile
	for id := 0; id < nvml.GPU_INSTANCE_PROFILE_COUNT; id++ {
		info, ret := d.handle.GetGpuInstanceProfileInfo(id)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return driverError(fmt.Sprintf("read GPU-instance profile %d of GPU %d", id, d.index), ret)
		}
		p, err := d.describeProfile(id, info, mem.Total)
		if err != nil {
			return err
		}
		infos[id] = info
		profiles = append(profiles, p)
	}
	if len(profiles) == 0 {
		// The driver hides every profile while MIG mode is off; say so
		// rather than report a GPU with nothing to offer.
		return driverError(fmt.Sprintf("list MIG profiles of GPU %d (is MIG mode enabled?)", d.index), nvml.ERROR_NOT_SUPPORTED)
	}
	gpu.SortProfiles(profiles)
	d.profiles, d.infos = profiles, infos
	return nil
}

func (d *Device) describeProfile(id int, info nvml.GpuInstanceProfileInfo, deviceMem uint64) (gpu.Profile, error) {
	name, err := ProfileName(id, int(info.SliceCount), info.MemorySizeMB, deviceMem)
	if err != nil {
		return gpu.Profile{}, fmt.Errorf("GPU %d: %w", d.index, err)
	}
	places, ret := d.handle.GetGpuInstancePossiblePlacements(&info)
	if ret != nvml.SUCCESS {
		return gpu.Profile{}, driverError(fmt.Sprintf("read placements of %s on GPU %d", name, d.index), ret)
	}
	p := gpu.Profile{
		ID:         id,
		Name:       name,
		Slices:     int(info.SliceCount),
		MemoryMiB:  info.MemorySizeMB,
		MaxCount:   int(info.InstanceCount),
		Placements: make([]gpu.Placement, 0, len(places)),
	}
	for _, pl := range places {
		p.Placements = append(p.Placements, gpu.Placement{Start: int(pl.Start), Size: int(pl.Size)})
	}
	sort.Slice(p.Placements, func(i, j int) bool { return p.Placements[i].Start < p.Placements[j].Start })
	return p, nil
}

// profile returns the cached NVML info and description of a profile id.
func (d *Device) profile(id int) (nvml.GpuInstanceProfileInfo, gpu.Profile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.loadProfilesLocked(); err != nil {
		return nvml.GpuInstanceProfileInfo{}, gpu.Profile{}, err
	}
	info, ok := d.infos[id]
	if !ok {
		return info, gpu.Profile{}, driverError(fmt.Sprintf("look up GPU-instance profile %d on GPU %d", id, d.index), nvml.ERROR_INVALID_ARGUMENT)
	}
	for _, p := range d.profiles {
		if p.ID == id {
			return info, p, nil
		}
	}
	return info, gpu.Profile{}, fmt.Errorf("GPU %d: profile %d cached without a description", d.index, id)
}

func cloneProfiles(in []gpu.Profile) []gpu.Profile {
	out := make([]gpu.Profile, len(in))
	for i, p := range in {
		p.Placements = append([]gpu.Placement(nil), p.Placements...)
		out[i] = p
	}
	return out
}
