package nvmlgpu

import (
	"fmt"
	"sort"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu"
)

// CreateGPUInstance makes a GI of profileID at a placement and returns its id.
func (d *Device) CreateGPUInstance(profileID int, at gpu.Placement) (int, error) {
	info, p, err := d.profile(profileID)
	if err != nil {
		return 0, fmt.Errorf("create GPU instance at %s on GPU %d: %w", at, d.index, err)
	}
	op := fmt.Sprintf("create GPU instance %s at %s on GPU %d", p.Name, at, d.index)
	if at.Start < 0 || at.Size <= 0 {
		return 0, driverError(op, nvml.ERROR_INVALID_ARGUMENT)
	}
	place := nvml.GpuInstancePlacement{Start: uint32(at.Start), Size: uint32(at.Size)}
	gi, ret := d.handle.CreateGpuInstanceWithPlacement(&info, &place)
	if ret != nvml.SUCCESS {
		return 0, driverError(op, ret)
	}
	giInfo, ret := gi.GetInfo()
	if ret != nvml.SUCCESS {
		return 0, driverError(op+": read the new instance's id", ret)
	}
	return int(giInfo.Id), nil
}

// CreateComputeInstance makes the GI's single full-size CI and returns the
// complete instance with its MIG UUID. If the CI was made but its UUID cannot
// be read, the instance is returned along with the error so the caller can
// destroy what exists.
func (d *Device) CreateComputeInstance(giID int) (gpu.Instance, error) {
	gi, giInfo, err := d.gpuInstance(giID, "create compute instance on")
	if err != nil {
		return gpu.Instance{}, err
	}
	_, p, err := d.profile(int(giInfo.ProfileId))
	if err != nil {
		return gpu.Instance{}, fmt.Errorf("create compute instance on GPU instance %d of GPU %d: %w", giID, d.index, err)
	}
	op := fmt.Sprintf("create compute instance on GPU instance %d (%s) of GPU %d", giID, p.Name, d.index)
	ciProfiles, err := d.ciProfiles(gi, giInfo)
	if err != nil {
		return gpu.Instance{}, fmt.Errorf("%s: %w", op, err)
	}
	full, ok := fullSize(ciProfiles, p.Slices)
	if !ok {
		return gpu.Instance{}, driverError(op+": no full-size compute profile", nvml.ERROR_NOT_SUPPORTED)
	}
	ci, ret := gi.CreateComputeInstance(&full)
	if ret != nvml.SUCCESS {
		return gpu.Instance{}, driverError(op, ret)
	}
	ciInfo, ret := ci.GetInfo()
	if ret != nvml.SUCCESS {
		return gpu.Instance{}, driverError(op+": read the new instance's id", ret)
	}
	inst := instanceOf(d.index, giInfo)
	inst.CIID = int(ciInfo.Id)
	migs, err := d.migDevices()
	if err != nil {
		return inst, fmt.Errorf("%s: find its MIG device: %w", op, err)
	}
	m, ok := migs[migKey{giID, inst.CIID}]
	if !ok {
		return inst, fmt.Errorf("%s: no MIG device for compute instance %d: %w", op, inst.CIID, gpu.ErrNotFound)
	}
	inst.UUID = m.uuid
	return inst, nil
}

// DestroyComputeInstance destroys every compute instance of the GI; migpro
// makes only one, but a GI carved by hand may hold several.
func (d *Device) DestroyComputeInstance(giID int) error {
	gi, giInfo, err := d.gpuInstance(giID, "destroy compute instance of")
	if err != nil {
		return err
	}
	cis, err := d.computeInstances(gi, giInfo)
	if err != nil {
		return fmt.Errorf("destroy compute instance of GPU instance %d on GPU %d: %w", giID, d.index, err)
	}
	if len(cis) == 0 {
		return driverError(fmt.Sprintf("destroy compute instance of GPU instance %d on GPU %d: it has none", giID, d.index), nvml.ERROR_NOT_FOUND)
	}
	for _, ci := range cis {
		if ret := ci.handle.Destroy(); ret != nvml.SUCCESS {
			return driverError(fmt.Sprintf("destroy compute instance %d of GPU instance %d on GPU %d", ci.id, giID, d.index), ret)
		}
	}
	return nil
}

// DestroyGPUInstance destroys a GI that no longer has a compute instance.
func (d *Device) DestroyGPUInstance(giID int) error {
	gi, _, err := d.gpuInstance(giID, "destroy")
	if err != nil {
		return err
	}
	if ret := gi.Destroy(); ret != nvml.SUCCESS {
		return driverError(fmt.Sprintf("destroy GPU instance %d on GPU %d", giID, d.index), ret)
	}
	return nil
}

// Instances lists every GI on the device in slot order, half-made ones
// (no compute instance) included with CIID set to gpu.NoComputeInstance.
// A listing is a snapshot taken call by call: an instance destroyed while it
// runs (by another goroutine or another NVML client) is left out rather
// than failing the whole listing.
func (d *Device) Instances() ([]gpu.Instance, error) {
	d.mu.Lock()
	err := d.loadProfilesLocked()
	infos := make([]nvml.GpuInstanceProfileInfo, 0, len(d.infos))
	for _, p := range d.profiles {
		infos = append(infos, d.infos[p.ID])
	}
	d.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	migs, err := d.migDevices()
	if err != nil {
		return nil, fmt.Errorf("list instances of GPU %d: %w", d.index, err)
	}
	var out []gpu.Instance
	for i := range infos {
		gis, ret := d.handle.GetGpuInstances(&infos[i])
		if ret != nvml.SUCCESS {
			return nil, driverError(fmt.Sprintf("list GPU instances of profile %d on GPU %d", infos[i].Id, d.index), ret)
		}
		for _, gi := range gis {
			giInfo, ret := gi.GetInfo()
			if vanished(ret) {
				continue
			}
			if ret != nvml.SUCCESS {
				return nil, driverError(fmt.Sprintf("read a GPU instance of profile %d on GPU %d", infos[i].Id, d.index), ret)
			}
			inst := instanceOf(d.index, giInfo)
			cis, err := d.computeInstances(gi, giInfo)
			if err != nil {
				return nil, fmt.Errorf("list compute instances of GPU instance %d on GPU %d: %w", giInfo.Id, d.index, err)
			}
			if len(cis) > 0 {
				inst.CIID = cis[0].id
				inst.UUID = migs[migKey{inst.GIID, inst.CIID}].uuid
			}
			out = append(out, inst)
		}
	}
	gpu.SortInstances(out)
	return out, nil
}

// InstanceMemory is the GI's framebuffer use, read from its MIG device.
func (d *Device) InstanceMemory(giID int) (gpu.MemoryInfo, error) {
	if _, _, err := d.gpuInstance(giID, "read memory of"); err != nil {
		return gpu.MemoryInfo{}, err
	}
	migs, err := d.migDevicesOf(giID)
	if err != nil {
		return gpu.MemoryInfo{}, fmt.Errorf("read memory of GPU instance %d on GPU %d: %w", giID, d.index, err)
	}
	if len(migs) == 0 {
		return gpu.MemoryInfo{}, fmt.Errorf("read memory of GPU instance %d on GPU %d: it has no compute instance: %w", giID, d.index, gpu.ErrNotFound)
	}
	// Compute instances of one GI share its memory, so any one answers.
	m, ret := migs[0].handle.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return gpu.MemoryInfo{}, driverError(fmt.Sprintf("read memory of GPU instance %d on GPU %d", giID, d.index), ret)
	}
	return gpu.MemoryInfo{Used: m.Used, Total: m.Total}, nil
}

// InstanceProcesses lists the processes running on the GI's compute
// instances, sorted by pid. A GI without a compute instance runs nothing.
func (d *Device) InstanceProcesses(giID int) ([]gpu.Process, error) {
	if _, _, err := d.gpuInstance(giID, "list processes of"); err != nil {
		return nil, err
	}
	migs, err := d.migDevicesOf(giID)
	if err != nil {
		return nil, fmt.Errorf("list processes of GPU instance %d on GPU %d: %w", giID, d.index, err)
	}
	out := []gpu.Process{}
	for _, m := range migs {
		procs, ret := m.handle.GetComputeRunningProcesses()
		if ret != nvml.SUCCESS {
			return nil, driverError(fmt.Sprintf("list processes of GPU instance %d on GPU %d", giID, d.index), ret)
		}
		for _, p := range procs {
			out = append(out, gpu.Process{PID: p.Pid, UsedBytes: p.UsedGpuMemory})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

func instanceOf(gpuIndex int, info nvml.GpuInstanceInfo) gpu.Instance {
	return gpu.Instance{
		GPU:       gpuIndex,
		GIID:      int(info.Id),
		CIID:      gpu.NoComputeInstance,
		ProfileID: int(info.ProfileId),
		Placement: gpu.Placement{Start: int(info.Placement.Start), Size: int(info.Placement.Size)},
	}
}

// gpuInstance fetches a GI by id; verb names the caller's action for the
// error, e.g. "destroy" gives "destroy GPU instance 3 on GPU 0: ERROR_NOT_FOUND".
func (d *Device) gpuInstance(giID int, verb string) (nvml.GpuInstance, nvml.GpuInstanceInfo, error) {
	op := fmt.Sprintf("%s GPU instance %d on GPU %d", verb, giID, d.index)
	if giID < 0 {
		return nil, nvml.GpuInstanceInfo{}, driverError(op, nvml.ERROR_INVALID_ARGUMENT)
	}
	gi, ret := d.handle.GetGpuInstanceById(giID)
	if ret != nvml.SUCCESS {
		return nil, nvml.GpuInstanceInfo{}, driverError(op, ret)
	}
	info, ret := gi.GetInfo()
	if ret != nvml.SUCCESS {
		return nil, nvml.GpuInstanceInfo{}, driverError(op, ret)
	}
	return gi, info, nil
}
