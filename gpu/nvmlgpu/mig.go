package nvmlgpu

import (
	"fmt"
	"sort"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

type migKey struct{ gi, ci int }

type migDevice struct {
	gi, ci int
	handle nvml.Device
	uuid   string
}

// migDevices maps (GI, CI) to the MIG device NVML exposes for it. The MIG
// device is the only place NVML gives the "MIG-…" UUID and per-instance
// memory, and its index is unrelated to the instance ids, so it is found by
// walking every index.
func (d *Device) migDevices() (map[migKey]migDevice, error) {
	count, ret := d.handle.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, driverError(fmt.Sprintf("count MIG devices of GPU %d", d.index), ret)
	}
	out := make(map[migKey]migDevice, count)
	for i := 0; i < count; i++ {
		h, ret := d.handle.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			// Indices are sparse: an empty one just has no instance behind it.
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, driverError(fmt.Sprintf("get MIG device %d of GPU %d", i, d.index), ret)
		}
		m := migDevice{handle: h}
		m.gi, ret = h.GetGpuInstanceId()
		if ret == nvml.SUCCESS {
			m.ci, ret = h.GetComputeInstanceId()
		}
		if ret == nvml.SUCCESS {
			m.uuid, ret = h.GetUUID()
		}
		if vanished(ret) {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, driverError(fmt.Sprintf("read MIG device %d of GPU %d", i, d.index), ret)
		}
		out[migKey{m.gi, m.ci}] = m
	}
	return out, nil
}

// migDevicesOf lists the MIG devices of one GI, by compute-instance id.
func (d *Device) migDevicesOf(giID int) ([]migDevice, error) {
	all, err := d.migDevices()
	if err != nil {
		return nil, err
	}
	var out []migDevice
	for k, m := range all {
		if k.gi == giID {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ci < out[j].ci })
	return out, nil
}

// ciProfiles lists the compute-instance profiles a GI supports.
func (d *Device) ciProfiles(gi nvml.GpuInstance, giInfo nvml.GpuInstanceInfo) ([]nvml.ComputeInstanceProfileInfo, error) {
	d.mu.Lock()
	cached, ok := d.ciByGI[giInfo.ProfileId]
	d.mu.Unlock()
	if ok {
		return cached, nil
	}
	out := []nvml.ComputeInstanceProfileInfo{}
	for id := 0; id < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; id++ {
		info, ret := gi.GetComputeInstanceProfileInfo(id, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, driverError(fmt.Sprintf("read compute profile %d of GPU instance %d", id, giInfo.Id), ret)
		}
		out = append(out, info)
	}
	if len(out) == 0 {
		// Every GI profile has at least its full-size compute profile, so
		// an empty answer means the GI vanished mid-walk; do not cache it.
		return out, nil
	}
	d.mu.Lock()
	if d.ciByGI == nil {
		d.ciByGI = map[uint32][]nvml.ComputeInstanceProfileInfo{}
	}
	d.ciByGI[giInfo.ProfileId] = out
	d.mu.Unlock()
	return out, nil
}

// fullSize picks the compute profile that spans the whole GI. Profiles come
// in id order, so the plain profile wins over a same-size revision.
func fullSize(ps []nvml.ComputeInstanceProfileInfo, slices int) (nvml.ComputeInstanceProfileInfo, bool) {
	for _, p := range ps {
		if int(p.SliceCount) == slices {
			return p, true
		}
	}
	return nvml.ComputeInstanceProfileInfo{}, false
}

type computeInstance struct {
	id     int
	handle nvml.ComputeInstance
}

// computeInstances lists a GI's compute instances of every profile, by id.
func (d *Device) computeInstances(gi nvml.GpuInstance, giInfo nvml.GpuInstanceInfo) ([]computeInstance, error) {
	profiles, err := d.ciProfiles(gi, giInfo)
	if err != nil {
		return nil, err
	}
	var out []computeInstance
	for i := range profiles {
		cis, ret := gi.GetComputeInstances(&profiles[i])
		if vanished(ret) {
			// The GI went away under us; it has no compute instances now.
			return nil, nil
		}
		if ret != nvml.SUCCESS {
			return nil, driverError(fmt.Sprintf("list compute instances of profile %d on GPU instance %d", profiles[i].Id, giInfo.Id), ret)
		}
		for _, ci := range cis {
			info, ret := ci.GetInfo()
			if vanished(ret) {
				continue
			}
			if ret != nvml.SUCCESS {
				return nil, driverError(fmt.Sprintf("read a compute instance of GPU instance %d", giInfo.Id), ret)
			}
			out = append(out, computeInstance{id: int(info.Id), handle: ci})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// vanished reports the codes a handle answers with once its instance has
// been destroyed between being listed and being read.
func vanished(ret nvml.Return) bool {
	return ret == nvml.ERROR_INVALID_ARGUMENT || ret == nvml.ERROR_NOT_FOUND
}
