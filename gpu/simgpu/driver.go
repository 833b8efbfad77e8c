package simgpu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/sirupsen/logrus"
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
	files   *devFiles   // nil when the node has no root directory
	store   *stateStore // nil when the node has no state file
	log     logrus.FieldLogger
	version string // the driver version NVML reports
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
// state changes. With a state file, a change that cannot be saved is undone
// and reported as ERROR_UNKNOWN: an instance that would vanish in a crash
// must not be handed to a caller who then starts a pod on it.
func (g *gpuState) reconfigure(op Op, apply func() nvml.Return, undo func()) nvml.Return {
	g.reconfig.Lock()
	defer g.reconfig.Unlock()
	g.d.pause(op)
	g.d.mu.Lock()
	defer g.d.mu.Unlock()
	if ret := g.d.injectedLocked(op); ret != nvml.SUCCESS {
		return ret
	}
	if ret := apply(); ret != nvml.SUCCESS {
		return ret
	}
	if err := g.d.persistLocked(); err != nil {
		undo()
		g.d.log.WithError(err).WithFields(logrus.Fields{"gpu": g.index, "op": op}).
			Error("simulated driver undid an operation it could not save")
		return nvml.ERROR_UNKNOWN
	}
	return nvml.SUCCESS
}

func (g *gpuState) usedSlicesLocked() int {
	n := 0
	for _, gi := range g.gis {
		n += int(gi.info.SliceCount)
	}
	return n
}

func (g *gpuState) sortedGIsLocked() []*giState { return byID(g.gis) }

func (gi *giState) sortedCIsLocked() []*ciState { return byID(gi.cis) }

// byID lists a map's values in order of their id keys.
func byID[T any](m map[int]T) []T {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make([]T, len(ids))
	for i, id := range ids {
		out[i] = m[id]
	}
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
	if info == nil || place == nil {
		if !g.migOn {
			return nil, nvml.ERROR_NOT_SUPPORTED
		}
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	known, ret := g.admitGILocked(int(info.Id), *place)
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	return g.insertGILocked(lowestFree(g.gis, 1), known, *place), nvml.SUCCESS
}

// admitGILocked is the driver's refusal list for a new GPU instance. Loading
// a state file runs it too, so a loaded node obeys the rules a live one does.
func (g *gpuState) admitGILocked(profileID int, place nvml.GpuInstancePlacement) (nvml.GpuInstanceProfileInfo, nvml.Return) {
	if !g.migOn {
		return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
	}
	known, ok := g.model.profileInfo(profileID)
	if !ok {
		return known, nvml.ERROR_INVALID_ARGUMENT
	}
	legal := false
	for _, p := range g.model.placementsFor(profileID) {
		if p == place {
			legal = true
			break
		}
	}
	if !legal {
		return known, nvml.ERROR_INVALID_ARGUMENT
	}
	sameProfile := 0
	for _, gi := range g.gis {
		if overlaps(gi.placement, place) {
			return known, nvml.ERROR_INSUFFICIENT_RESOURCES
		}
		if gi.info.Id == known.Id {
			sameProfile++
		}
	}
	if sameProfile >= int(known.InstanceCount) {
		return known, nvml.ERROR_INSUFFICIENT_RESOURCES
	}
	if g.usedSlicesLocked()+int(known.SliceCount) > g.model.computeSlices {
		return known, nvml.ERROR_INSUFFICIENT_RESOURCES
	}
	return known, nvml.SUCCESS
}

func (g *gpuState) insertGILocked(id int, info nvml.GpuInstanceProfileInfo, place nvml.GpuInstancePlacement) *giState {
	gi := &giState{
		g:         g,
		id:        id,
		info:      info,
		placement: place,
		cis:       map[int]*ciState{},
		procs:     map[uint32]uint64{},
	}
	gi.handle = newSimGI(gi)
	gi.capMinor = giCapMinor(g.index, gi.id)
	g.gis[gi.id] = gi
	g.d.files.addGI(gi)
	return gi
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
	known, ret := gi.admitCILocked(int(info.Id))
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	return gi.insertCILocked(lowestFree(gi.cis, 0), known, gi.g.nextMIGUUIDLocked()), nvml.SUCCESS
}

// admitCILocked is the driver's refusal list for a new compute instance.
func (gi *giState) admitCILocked(profileID int) (nvml.ComputeInstanceProfileInfo, nvml.Return) {
	known, ok := gi.ciProfile(profileID)
	if !ok {
		return known, nvml.ERROR_INVALID_ARGUMENT
	}
	used, same := 0, 0
	for _, ci := range gi.cis {
		used += int(ci.info.SliceCount)
		if ci.info.Id == known.Id {
			same++
		}
	}
	if used+int(known.SliceCount) > int(gi.info.SliceCount) || same >= int(known.InstanceCount) {
		return known, nvml.ERROR_INSUFFICIENT_RESOURCES
	}
	return known, nvml.SUCCESS
}

// nextMIGUUIDLocked advances the GPU's UUID generator. It skips any UUID a
// compute instance already holds, so a state file whose generator position
// was hand-edited backwards still cannot yield a duplicate.
func (g *gpuState) nextMIGUUIDLocked() string {
	for {
		uuid := deriveUUID("MIG", g.d.seed, "mig", g.index, g.made)
		g.made++
		if !g.d.migUUIDInUseLocked(uuid) {
			return uuid
		}
	}
}

func (d *driver) migUUIDInUseLocked(uuid string) bool {
	for _, g := range d.gpus {
		for _, gi := range g.gis {
			for _, ci := range gi.cis {
				if ci.uuid == uuid {
					return true
				}
			}
		}
	}
	return false
}

func (gi *giState) insertCILocked(id int, info nvml.ComputeInstanceProfileInfo, uuid string) *ciState {
	ci := &ciState{gi: gi, id: id, info: info, uuid: uuid}
	ci.capMinor = gi.capMinor + 1 + ci.id
	ci.handle = newSimCI(ci)
	ci.mig = newSimMigDevice(ci)
	gi.cis[ci.id] = ci
	gi.g.d.files.addCI(ci)
	return ci
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

// undoCreateLocked takes back a compute instance createCILocked made,
// rewinding the UUID generator to made so the next create reuses the UUID.
func (ci *ciState) undoCreateLocked(made uint64) {
	delete(ci.gi.cis, ci.id)
	ci.destroyed = true
	ci.gi.g.made = made
	ci.gi.g.d.files.removeCI(ci)
}

// undoDestroyLocked puts back a compute instance destroyLocked removed,
// keeping its handles valid.
func (ci *ciState) undoDestroyLocked() {
	ci.destroyed = false
	ci.gi.cis[ci.id] = ci
	ci.gi.g.d.files.addCI(ci)
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

func (gi *giState) undoCreateLocked() {
	delete(gi.g.gis, gi.id)
	gi.destroyed = true
	gi.g.d.files.removeGI(gi)
}

func (gi *giState) undoDestroyLocked() {
	gi.destroyed = false
	gi.g.gis[gi.id] = gi
	gi.g.d.files.addGI(gi)
}

// memoryLocked is what the GI's MIG device reports: the level a test set,
// plus what its processes hold, plus what real processes allocated through
// the stub libcuda on its compute instances; never more than the instance
// has.
func (gi *giState) memoryLocked() nvml.Memory {
	total := gi.info.MemorySizeMB * mib
	used := gi.memUsed
	for _, b := range gi.procs {
		used += b
	}
	for _, ci := range gi.cis {
		used += gi.g.d.files.usedBytes(ci.uuid)
	}
	if used > total {
		used = total
	}
	return nvml.Memory{Total: total, Used: used, Free: total - used}
}
