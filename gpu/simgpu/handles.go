package simgpu

import (
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/migpro/migpro/gpu/nvmlgpu"
)

// The handles embed go-nvml's mock types, which supply the hundreds of NVML
// calls migpro never makes (they panic with the method's name if called), and
// override the calls the adapter does make with methods that consult the
// driver state. Overriding methods rather than setting the mocks' ...Func
// fields matters for a long-running simulated agent: the mocks append every
// call's arguments to an internal slice that is never trimmed.

type simLib struct {
	*mock.Interface
	d *driver
}

var _ nvml.Interface = (*simLib)(nil)

func (l *simLib) Init() nvml.Return {
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	l.d.inits++
	return nvml.SUCCESS
}

func (l *simLib) Shutdown() nvml.Return {
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	if l.d.inits == 0 {
		return nvml.ERROR_UNINITIALIZED
	}
	l.d.inits--
	return nvml.SUCCESS
}

func (l *simLib) ErrorString(r nvml.Return) string { return nvmlgpu.CodeName(r) }

func (l *simLib) DeviceGetCount() (int, nvml.Return) {
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	if l.d.inits == 0 {
		return 0, nvml.ERROR_UNINITIALIZED
	}
	return len(l.d.gpus), nvml.SUCCESS
}

func (l *simLib) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	if l.d.inits == 0 {
		return nil, nvml.ERROR_UNINITIALIZED
	}
	if i < 0 || i >= len(l.d.gpus) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return l.d.gpus[i].handle, nvml.SUCCESS
}

func (l *simLib) EventSetCreate() (nvml.EventSet, nvml.Return) {
	return newSimEventSet(l.d), nvml.SUCCESS
}

// simDevice is a physical GPU handle.
type simDevice struct {
	*mock.Device
	g *gpuState
}

var _ nvml.Device = (*simDevice)(nil)

func (h *simDevice) lock() func() { h.g.d.mu.Lock(); return h.g.d.mu.Unlock }

// GetName drops the mock's "Mock " prefix so logs read like hardware.
func (h *simDevice) GetName() (string, nvml.Return) {
	return strings.TrimPrefix(h.g.model.cfg.Name, "Mock "), nvml.SUCCESS
}

func (h *simDevice) GetUUID() (string, nvml.Return)     { return h.g.uuid, nvml.SUCCESS }
func (h *simDevice) GetIndex() (int, nvml.Return)       { return h.g.index, nvml.SUCCESS }
func (h *simDevice) GetMinorNumber() (int, nvml.Return) { return h.g.index, nvml.SUCCESS }

func (h *simDevice) IsMigDeviceHandle() (bool, nvml.Return) { return false, nvml.SUCCESS }

func (h *simDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	defer h.lock()()
	total := h.g.model.deviceMemBytes()
	var used uint64
	for _, gi := range h.g.gis {
		used += gi.memoryLocked().Used
	}
	return nvml.Memory{Total: total, Used: used, Free: total - used}, nvml.SUCCESS
}

func (h *simDevice) GetMigMode() (int, int, nvml.Return) {
	defer h.lock()()
	mode := nvml.DEVICE_MIG_DISABLE
	if h.g.migOn {
		mode = nvml.DEVICE_MIG_ENABLE
	}
	return mode, mode, nvml.SUCCESS
}

func (h *simDevice) GetGpuInstanceProfileInfo(id int) (nvml.GpuInstanceProfileInfo, nvml.Return) {
	defer h.lock()()
	if id < 0 || id >= nvml.GPU_INSTANCE_PROFILE_COUNT {
		return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_INVALID_ARGUMENT
	}
	if !h.g.migOn {
		return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	info, ok := h.g.model.profileInfo(id)
	if !ok {
		return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	return info, nvml.SUCCESS
}

func (h *simDevice) GetGpuInstancePossiblePlacements(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstancePlacement, nvml.Return) {
	defer h.lock()()
	if info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	if !h.g.migOn {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	if _, ok := h.g.model.profileInfo(int(info.Id)); !ok {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return h.g.model.placementsFor(int(info.Id)), nvml.SUCCESS
}

func (h *simDevice) CreateGpuInstanceWithPlacement(info *nvml.GpuInstanceProfileInfo, place *nvml.GpuInstancePlacement) (nvml.GpuInstance, nvml.Return) {
	var made *giState
	ret := h.g.reconfigure(OpCreateGI, func() nvml.Return {
		var ret nvml.Return
		made, ret = h.g.createGILocked(info, place)
		return ret
	}, func() { made.undoCreateLocked() })
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	return made.handle, nvml.SUCCESS
}

func (h *simDevice) GetGpuInstances(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstance, nvml.Return) {
	defer h.lock()()
	if info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	if !h.g.migOn {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	out := []nvml.GpuInstance{}
	for _, gi := range h.g.sortedGIsLocked() {
		if gi.info.Id == info.Id {
			out = append(out, gi.handle)
		}
	}
	return out, nvml.SUCCESS
}

func (h *simDevice) GetGpuInstanceById(id int) (nvml.GpuInstance, nvml.Return) {
	defer h.lock()()
	if !h.g.migOn {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	gi, ok := h.g.gis[id]
	if !ok {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return gi.handle, nvml.SUCCESS
}

// GetMaxMigDeviceCount is one MIG device per compute slice, the most a GPU
// can be split into.
func (h *simDevice) GetMaxMigDeviceCount() (int, nvml.Return) {
	return h.g.model.computeSlices, nvml.SUCCESS
}

func (h *simDevice) GetMigDeviceHandleByIndex(i int) (nvml.Device, nvml.Return) {
	defer h.lock()()
	if i < 0 || i >= h.g.model.computeSlices {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	migs := h.g.migDevicesLocked()
	if i >= len(migs) {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return migs[i].mig, nvml.SUCCESS
}

func (h *simDevice) GetSupportedEventTypes() (uint64, nvml.Return) {
	return nvml.EventTypeXidCriticalError, nvml.SUCCESS
}

func (h *simDevice) RegisterEvents(types uint64, set nvml.EventSet) nvml.Return {
	es, ok := set.(*simEventSet)
	if !ok || es == nil {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	defer h.lock()()
	if types&nvml.EventTypeXidCriticalError != 0 && !es.freed {
		h.g.eventSets = append(h.g.eventSets, es)
	}
	return nvml.SUCCESS
}

// simGI is a GPU-instance handle. Once destroyed it answers
// INVALID_ARGUMENT, as a stale NVML handle does.
type simGI struct {
	*mock.GpuInstance
	gi *giState
}

var _ nvml.GpuInstance = (*simGI)(nil)

func newSimGI(gi *giState) *simGI { return &simGI{GpuInstance: &mock.GpuInstance{}, gi: gi} }

func (h *simGI) lock() func() { h.gi.g.d.mu.Lock(); return h.gi.g.d.mu.Unlock }

func (h *simGI) GetInfo() (nvml.GpuInstanceInfo, nvml.Return) {
	defer h.lock()()
	if h.gi.destroyed {
		return nvml.GpuInstanceInfo{}, nvml.ERROR_INVALID_ARGUMENT
	}
	return nvml.GpuInstanceInfo{
		Device:    h.gi.g.handle,
		Id:        uint32(h.gi.id),
		ProfileId: h.gi.info.Id,
		Placement: h.gi.placement,
	}, nvml.SUCCESS
}

func (h *simGI) GetComputeInstanceProfileInfo(id, engine int) (nvml.ComputeInstanceProfileInfo, nvml.Return) {
	defer h.lock()()
	if h.gi.destroyed || id < 0 || id >= nvml.COMPUTE_INSTANCE_PROFILE_COUNT {
		return nvml.ComputeInstanceProfileInfo{}, nvml.ERROR_INVALID_ARGUMENT
	}
	if engine != nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED {
		return nvml.ComputeInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	info, ok := h.gi.ciProfile(id)
	if !ok {
		return nvml.ComputeInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	return info, nvml.SUCCESS
}

func (h *simGI) CreateComputeInstance(info *nvml.ComputeInstanceProfileInfo) (nvml.ComputeInstance, nvml.Return) {
	var made *ciState
	var before uint64 // the UUID generator's position, for the undo
	ret := h.gi.g.reconfigure(OpCreateCI, func() nvml.Return {
		var ret nvml.Return
		before = h.gi.g.made
		made, ret = h.gi.createCILocked(info)
		return ret
	}, func() { made.undoCreateLocked(before) })
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	return made.handle, nvml.SUCCESS
}

func (h *simGI) GetComputeInstances(info *nvml.ComputeInstanceProfileInfo) ([]nvml.ComputeInstance, nvml.Return) {
	defer h.lock()()
	if h.gi.destroyed || info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	out := []nvml.ComputeInstance{}
	for _, ci := range h.gi.sortedCIsLocked() {
		if ci.info.Id == info.Id {
			out = append(out, ci.handle)
		}
	}
	return out, nvml.SUCCESS
}

func (h *simGI) GetComputeInstanceById(id int) (nvml.ComputeInstance, nvml.Return) {
	defer h.lock()()
	if h.gi.destroyed {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	ci, ok := h.gi.cis[id]
	if !ok {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return ci.handle, nvml.SUCCESS
}

func (h *simGI) Destroy() nvml.Return {
	return h.gi.g.reconfigure(OpDestroyGI, h.gi.destroyLocked, h.gi.undoDestroyLocked)
}

// simCI is a compute-instance handle.
type simCI struct {
	*mock.ComputeInstance
	ci *ciState
}

var _ nvml.ComputeInstance = (*simCI)(nil)

func newSimCI(ci *ciState) *simCI { return &simCI{ComputeInstance: &mock.ComputeInstance{}, ci: ci} }

func (h *simCI) GetInfo() (nvml.ComputeInstanceInfo, nvml.Return) {
	d := h.ci.gi.g.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if h.ci.destroyed {
		return nvml.ComputeInstanceInfo{}, nvml.ERROR_INVALID_ARGUMENT
	}
	return nvml.ComputeInstanceInfo{
		Device:      h.ci.gi.g.handle,
		GpuInstance: h.ci.gi.handle,
		Id:          uint32(h.ci.id),
		ProfileId:   h.ci.info.Id,
		Placement:   nvml.ComputeInstancePlacement{Start: 0, Size: h.ci.info.SliceCount},
	}, nvml.SUCCESS
}

func (h *simCI) Destroy() nvml.Return {
	return h.ci.gi.g.reconfigure(OpDestroyCI, h.ci.destroyLocked, h.ci.undoDestroyLocked)
}

// simMigDevice is the MIG device handle NVML exposes per compute instance.
type simMigDevice struct {
	*mock.Device
	ci *ciState
}

func newSimMigDevice(ci *ciState) *simMigDevice {
	return &simMigDevice{Device: &mock.Device{}, ci: ci}
}

func (h *simMigDevice) lock() func() { h.ci.gi.g.d.mu.Lock(); return h.ci.gi.g.d.mu.Unlock }

func (h *simMigDevice) IsMigDeviceHandle() (bool, nvml.Return) { return true, nvml.SUCCESS }

func (h *simMigDevice) GetDeviceHandleFromMigDeviceHandle() (nvml.Device, nvml.Return) {
	return h.ci.gi.g.handle, nvml.SUCCESS
}

func (h *simMigDevice) GetUUID() (string, nvml.Return) {
	defer h.lock()()
	if h.ci.destroyed {
		return "", nvml.ERROR_INVALID_ARGUMENT
	}
	return h.ci.uuid, nvml.SUCCESS
}

func (h *simMigDevice) GetGpuInstanceId() (int, nvml.Return) {
	defer h.lock()()
	if h.ci.destroyed {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return h.ci.gi.id, nvml.SUCCESS
}

func (h *simMigDevice) GetComputeInstanceId() (int, nvml.Return) {
	defer h.lock()()
	if h.ci.destroyed {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return h.ci.id, nvml.SUCCESS
}

func (h *simMigDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	defer h.lock()()
	if h.ci.destroyed {
		return nvml.Memory{}, nvml.ERROR_INVALID_ARGUMENT
	}
	return h.ci.gi.memoryLocked(), nvml.SUCCESS
}

func (h *simMigDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	defer h.lock()()
	if h.ci.destroyed {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	out := []nvml.ProcessInfo{}
	// Processes are kept per GI; they are reported on its first compute
	// instance only, so a GI split by hand does not count them twice.
	if cis := h.ci.gi.sortedCIsLocked(); len(cis) == 0 || cis[0] != h.ci {
		return out, nvml.SUCCESS
	}
	for pid, used := range h.ci.gi.procs {
		out = append(out, nvml.ProcessInfo{
			Pid:               pid,
			UsedGpuMemory:     used,
			GpuInstanceId:     uint32(h.ci.gi.id),
			ComputeInstanceId: uint32(h.ci.id),
		})
	}
	sortProcs(out)
	return out, nvml.SUCCESS
}
