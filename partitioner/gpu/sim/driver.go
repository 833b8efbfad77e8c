package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Op names a MIG reconfiguration the simulated driver can delay or fail.
type Op string

// The reconfiguration operations. OpAll addresses all four in SetLatency.
const (
	OpCreateGI  Op = "create-gi"
	OpCreateCI  Op = "create-ci"
	OpDestroyCI Op = "destroy-ci"
	OpDestroyGI Op = "destroy-gi"
	OpAll       Op = "all"
)

var reconfigOps = []Op{OpCreateGI, OpCreateCI, OpDestroyCI, OpDestroyGI}

// unattributed is NVML's "no instance" id in event data.
const unattributed = 0xFFFFFFFF

const mib = 1024 * 1024

// driver is the simulated kernel driver: every GPU's MIG state behind one
// lock, which is simpler than per-GPU locks and cheap at this scale.
type driver struct {
	mu      sync.Mutex
	seed    int64
	inits   int
	gpus    []*gpuState
	faults  []*fault
	latency map[Op]time.Duration
	files   *devFiles // nil when the node has no root directory
}

type fault struct {
	op        Op
	remaining int
	code      nvml.Return
}

type gpuState struct {
	d      *driver
	index  int
	model  *model
	uuid   string
	migOn  bool
	handle *simDevice
	gis    map[int]*giState
	// made counts compute instances ever created here; it seeds MIG UUIDs so
	// they depend only on the seed and this GPU's own history, not on how
	// operations on different GPUs interleave.
	made      uint64
	eventSets []*simEventSet
	// reconfig serialises create and destroy on one GPU, as the driver does,
	// so injected latency adds up the way it does on hardware.
	reconfig sync.Mutex
}

type giState struct {
	g         *gpuState
	id        int
	info      nvml.GpuInstanceProfileInfo
	placement nvml.GpuInstancePlacement
	handle    *simGI
	cis       map[int]*ciState
	memUsed   uint64
	procs     map[uint32]uint64
	capMinor  int
	destroyed bool
}

type ciState struct {
	gi        *giState
	id        int
	info      nvml.ComputeInstanceProfileInfo
	uuid      string
	handle    *simCI
	mig       *simMigDevice
	capMinor  int
	destroyed bool
}

// deriveUUID makes a UUID-shaped id from the seed and a name, so two nodes
// built with the same seed and driven the same way agree byte for byte.
func deriveUUID(prefix string, seed int64, parts ...any) string {
	h := sha256.Sum256([]byte(fmt.Sprint(append([]any{seed}, parts...)...)))
	x := hex.EncodeToString(h[:16])
	return fmt.Sprintf("%s-%s-%s-%s-%s-%s", prefix, x[0:8], x[8:12], x[12:16], x[16:20], x[20:32])
}

// pause applies the configured latency for op, outside the state lock so
// reads (memory polling, listing) stay fast while a reconfiguration "runs".
func (d *driver) pause(op Op) {
	d.mu.Lock()
	lat := d.latency[op]
	d.mu.Unlock()
	if lat > 0 {
		time.Sleep(lat)
	}
}

// injectedLocked counts one attempt of op and reports the code of a fault
// that falls due on it, or SUCCESS.
func (d *driver) injectedLocked(op Op) nvml.Return {
	due := nvml.SUCCESS
	kept := d.faults[:0]
	for _, f := range d.faults {
		if f.op == op {
			f.remaining--
			if f.remaining == 0 {
				if due == nvml.SUCCESS {
					due = f.code
				}
				continue
			}
		}
		kept = append(kept, f)
	}
	d.faults = kept
	return due
}

// reconfigure runs one create or destroy the way the driver does: serialised
// per GPU, taking its time, and failing when a fault falls due before any
// state changes.
func (g *gpuState) reconfigure(op Op, apply func() nvml.Return) nvml.Return {
	g.reconfig.Lock()
	defer g.reconfig.Unlock()
	g.d.pause(op)
	g.d.mu.Lock()
	defer g.d.mu.Unlock()
	if ret := g.d.injectedLocked(op); ret != nvml.SUCCESS {
		return ret
	}
	return apply()
}

func (g *gpuState) usedSlicesLocked() int {
	n := 0
	for _, gi := range g.gis {
		n += int(gi.info.SliceCount)
	}
	return n
}

func (g *gpuState) sortedGIsLocked() []*giState {
	out := make([]*giState, 0, len(g.gis))
	for _, gi := range g.gis {
		out = append(out, gi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (gi *giState) sortedCIsLocked() []*ciState {
	out := make([]*ciState, 0, len(gi.cis))
	for _, ci := range gi.cis {
		out = append(out, ci)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// migDevicesLocked lists the GPU's MIG devices in (GI, CI) order, which is
// the order GetMigDeviceHandleByIndex hands them out.
func (g *gpuState) migDevicesLocked() []*ciState {
	var out []*ciState
	for _, gi := range g.sortedGIsLocked() {
		out = append(out, gi.sortedCIsLocked()...)
	}
	return out
}

// lowestFree returns the smallest id >= from that used does not hold, the
// way the driver hands out GI and CI ids.
func lowestFree[T any](used map[int]T, from int) int {
	for id := from; ; id++ {
		if _, ok := used[id]; !ok {
			return id
		}
	}
}

// createGILocked enforces the driver's rules for a new GPU instance.
func (g *gpuState) createGILocked(info *nvml.GpuInstanceProfileInfo, place *nvml.GpuInstancePlacement) (*giState, nvml.Return) {
	if !g.migOn {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	if info == nil || place == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	known, ok := g.model.profileInfo(int(info.Id))
	if !ok {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	legal := false
	for _, p := range g.model.placementsFor(int(info.Id)) {
		if p == *place {
			legal = true
			break
		}
	}
	if !legal {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	sameProfile := 0
	for _, gi := range g.gis {
		if overlaps(gi.placement, *place) {
			return nil, nvml.ERROR_INSUFFICIENT_RESOURCES
		}
		if gi.info.Id == known.Id {
			sameProfile++
		}
	}
	if sameProfile >= int(known.InstanceCount) {
		return nil, nvml.ERROR_INSUFFICIENT_RESOURCES
	}
	if g.usedSlicesLocked()+int(known.SliceCount) > g.model.computeSlices {
		return nil, nvml.ERROR_INSUFFICIENT_RESOURCES
	}
	gi := &giState{
		g:         g,
		id:        lowestFree(g.gis, 1),
		info:      known,
		placement: *place,
		cis:       map[int]*ciState{},
		procs:     map[uint32]uint64{},
	}
	gi.handle = newSimGI(gi)
	gi.capMinor = giCapMinor(g.index, gi.id)
	g.gis[gi.id] = gi
	g.d.files.addGI(gi)
	return gi, nvml.SUCCESS
}

func overlaps(a, b nvml.GpuInstancePlacement) bool {
	return a.Start < b.Start+b.Size && b.Start < a.Start+a.Size
}

// ciProfile is the model's compute profile table entry for this GI.
func (gi *giState) ciProfile(id int) (nvml.ComputeInstanceProfileInfo, bool) {
	byCI, ok := gi.g.model.cfg.MIGProfiles.ComputeInstanceProfiles[int(gi.info.Id)]
	if !ok {
		return nvml.ComputeInstanceProfileInfo{}, false
	}
	info, ok := byCI[id]
	return info, ok
}

func (gi *giState) createCILocked(info *nvml.ComputeInstanceProfileInfo) (*ciState, nvml.Return) {
	if gi.destroyed || info == nil {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	known, ok := gi.ciProfile(int(info.Id))
	if !ok {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	used, same := 0, 0
	for _, ci := range gi.cis {
		used += int(ci.info.SliceCount)
		if ci.info.Id == known.Id {
			same++
		}
	}
	if used+int(known.SliceCount) > int(gi.info.SliceCount) || same >= int(known.InstanceCount) {
		return nil, nvml.ERROR_INSUFFICIENT_RESOURCES
	}
	g := gi.g
	ci := &ciState{gi: gi, id: lowestFree(gi.cis, 0), info: known}
	ci.uuid = deriveUUID("MIG", g.d.seed, "mig", g.index, g.made)
	g.made++
	ci.capMinor = gi.capMinor + 1 + ci.id
	ci.handle = newSimCI(ci)
	ci.mig = newSimMigDevice(ci)
	gi.cis[ci.id] = ci
	g.d.files.addCI(ci)
	return ci, nvml.SUCCESS
}

func (ci *ciState) destroyLocked() nvml.Return {
	if ci.destroyed {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	if len(ci.gi.procs) > 0 {
		return nvml.ERROR_IN_USE
	}
	delete(ci.gi.cis, ci.id)
	ci.destroyed = true
	ci.gi.g.d.files.removeCI(ci)
	return nvml.SUCCESS
}

func (gi *giState) destroyLocked() nvml.Return {
	if gi.destroyed {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	if len(gi.cis) > 0 || len(gi.procs) > 0 {
		return nvml.ERROR_IN_USE
	}
	delete(gi.g.gis, gi.id)
	gi.destroyed = true
	gi.g.d.files.removeGI(gi)
	return nvml.SUCCESS
}

// memoryLocked is what the GI's MIG device reports: the level a test set
// plus what its processes hold, never more than the instance has.
func (gi *giState) memoryLocked() nvml.Memory {
	total := gi.info.MemorySizeMB * mib
	used := gi.memUsed
	for _, b := range gi.procs {
		used += b
	}
	if used > total {
		used = total
	}
	return nvml.Memory{Total: total, Used: used, Free: total - used}
}
