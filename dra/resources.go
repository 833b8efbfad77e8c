package dra

import (
	"fmt"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
)

// Limits of one ResourceSlice (resource.k8s.io/v1): devices that consume
// counters, and counter sets.
const (
	maxDevicesPerSlice     = resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
	maxCounterSetsPerSlice = resourceapi.ResourceSliceMaxCounterSets
)

// Counter and taint names.
const (
	counterSlices = "slices"
	taintKey      = "unhealthy"
)

// gpuInfo is what the driver reads once per GPU at start: NVML's profile
// table does not change while the agent runs.
type gpuInfo struct {
	index    int
	model    string
	uuid     string
	slots    int
	slices   int
	profiles []gpu.Profile // smallest first
}

// placement is one device: a profile at one legal placement of one GPU.
type placement struct {
	gpu     int
	profile gpu.Profile
	at      gpu.Placement
}

func (p placement) pin() partitioner.Pin { return partitioner.Pin{GPU: p.gpu, Start: p.at.Start} }

// deviceName is the device's name in the pool, a DNS label:
// "gpu<index>-<profile>-s<start>", e.g. "gpu0-1g-5gb-s6".
func deviceName(gpuIndex int, profile string, start int) string {
	return fmt.Sprintf("gpu%d-%s-s%d", gpuIndex, label(profile), start)
}

// label turns a profile name into DNS-label characters: "1g.5gb+me" is
// "1g-5gb-me".
func label(profile string) string {
	return strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '-'
	}, profile)
}

func counterSetName(gpuIndex int) string { return fmt.Sprintf("gpu%d", gpuIndex) }
func slotCounter(slot int) string        { return fmt.Sprintf("slot%d", slot) }
func countCounter(profile string) string { return "count-" + label(profile) }

// limitsCount reports whether a profile's instance count needs a counter of
// its own: the driver allows fewer instances than its placements hold side
// by side (a media-extension profile, for example).
func limitsCount(p gpu.Profile) bool {
	disjoint, end := 0, -1
	for _, pl := range p.Placements { // NVML lists them by start
		if pl.Start >= end {
			disjoint++
			end = pl.End()
		}
	}
	return p.MaxCount > 0 && p.MaxCount < disjoint
}

// placements lists every device of every GPU.
func placements(gpus []gpuInfo) []placement {
	var out []placement
	for _, g := range gpus {
		for _, pr := range g.profiles {
			for _, pl := range pr.Placements {
				out = append(out, placement{gpu: g.index, profile: pr, at: pl})
			}
		}
	}
	return out
}

// state is the snapshot the slices are built from.
type state struct {
	gpus      []gpuInfo
	instances []partitioner.Instance
	// plan is the partitioner's pinned plan (Partitioner.PlanAt), best its
	// own choice for the next request of a profile (Partitioner.Plan).
	plan func(profile string, pin partitioner.Pin) (partitioner.Plan, error)
	best func(profile string) (partitioner.Plan, error)
	// healthy reports an instance's health; gpuHealthy a whole GPU's.
	healthy    func(partitioner.Instance) bool
	gpuHealthy func(int) bool
}

// heldOutside reports whether an instance holds its space outside DRA: in
// use by a device-plugin pod or a local user. Idle instances are free space
// to DRA (Prepare reuses or destroys them); instances being created or
// destroyed are transient and left to the next republish.
func heldOutside(in partitioner.Instance) bool {
	return in.State == partitioner.InUse && !strings.HasPrefix(in.Owner, ownerPrefix)
}

// build turns a snapshot into the pool's slices: counter sets first, then
// the devices in preference order.
func build(st state) []resourceslice.Slice {
	var sets []resourceapi.CounterSet
	blocked := map[int][]gpu.Placement{}
	for _, g := range st.gpus {
		counters := map[string]resourceapi.Counter{}
		taken := make([]bool, g.slots)
		slices := g.slices
		counts := map[string]int{}
		for _, in := range st.instances {
			if in.GPU != g.index || !heldOutside(in) {
				continue
			}
			blocked[g.index] = append(blocked[g.index], in.Placement)
			for s := in.Placement.Start; s < in.Placement.End() && s < g.slots; s++ {
				taken[s] = true
			}
			for _, pr := range g.profiles {
				if pr.Name == in.Profile {
					slices -= pr.Slices
				}
			}
			counts[in.Profile]++
		}
		for s := 0; s < g.slots; s++ {
			counters[slotCounter(s)] = counter(boolInt(!taken[s]))
		}
		counters[counterSlices] = counter(max(slices, 0))
		for _, pr := range g.profiles {
			if limitsCount(pr) {
				counters[countCounter(pr.Name)] = counter(max(pr.MaxCount-counts[pr.Name], 0))
			}
		}
		sets = append(sets, resourceapi.CounterSet{Name: counterSetName(g.index), Counters: counters})
	}
	var out []resourceslice.Slice
	for len(sets) > 0 {
		n := min(len(sets), maxCounterSetsPerSlice)
		out = append(out, resourceslice.Slice{SharedCounters: sets[:n]})
		sets = sets[n:]
	}
	devs := ordered(st, blocked)
	for len(devs) > 0 {
		n := min(len(devs), maxDevicesPerSlice)
		out = append(out, resourceslice.Slice{Devices: devs[:n]})
		devs = devs[n:]
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func counter(n int) resourceapi.Counter {
	return resourceapi.Counter{Value: *resource.NewQuantity(int64(n), resource.DecimalSI)}
}

// ranked is a device with its sort key.
type ranked struct {
	dev placement
	// class: 0 reuse an idle instance there, 1 create in free space, 2
	// create after destroying idle instances, 3 the partitioner would wait
	// (a claim holds the space: counters keep the scheduler off it).
	class     int
	plan      partitioner.Plan
	profileAt int  // the profile's position, smallest first
	chosen    bool // the partitioner's own choice for the profile's next request
}

// ordered lists the devices not blocked by instances held outside DRA, in
// migpro's preference order: profiles smallest first (profileRanks: by
// memory, then slices), so a claim by memory
// gets the smallest profile that holds it; within a profile, first the
// placement the partitioner itself would choose for the profile's next
// request (Partitioner.Plan), so the scheduler's first fit is migpro's
// choice; then reuse before creating in free space before destroying idle
// instances, each by the layouts the placement leaves reachable (most
// first), the lower GPU, then the higher slot, as the reachability policy
// breaks ties.
func ordered(st state, blocked map[int][]gpu.Placement) []resourceapi.Device {
	profileAt := profileRanks(st.gpus)
	choice := map[string]partitioner.Pin{}
	chose := map[string]bool{}
	var list []ranked
	for _, p := range placements(st.gpus) {
		if overlapsAny(p.at, blocked[p.gpu]) {
			continue
		}
		name := p.profile.Name
		if !chose[name] {
			chose[name] = true
			if pin, ok := chosenPin(st, name); ok {
				choice[name] = pin
			}
		}
		r := ranked{dev: p, profileAt: profileAt[name]}
		if pin, ok := choice[name]; ok && pin == p.pin() {
			r.chosen = true
		}
		plan, err := st.plan(name, p.pin())
		switch {
		case err != nil:
			r.class = 3
		case plan.Reuse != nil:
			r.class = 0
		case len(plan.Steps) > 1:
			r.class = 2
		default:
			r.class = 1
		}
		r.plan = plan
		list = append(list, r)
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.profileAt != b.profileAt {
			return a.profileAt < b.profileAt
		}
		if a.chosen != b.chosen {
			return a.chosen
		}
		if a.class != b.class {
			return a.class < b.class
		}
		if a.plan.Reachable != b.plan.Reachable {
			return a.plan.Reachable > b.plan.Reachable
		}
		if a.dev.gpu != b.dev.gpu {
			return a.dev.gpu < b.dev.gpu
		}
		return a.dev.at.Start > b.dev.at.Start
	})
	out := make([]resourceapi.Device, 0, len(list))
	for _, r := range list {
		out = append(out, device(st, r.dev))
	}
	return out
}

// chosenPin is where the partitioner would put the profile's next request:
// the idle instance it would reuse, or the placement it would create.
func chosenPin(st state, profile string) (partitioner.Pin, bool) {
	if st.best == nil {
		return partitioner.Pin{}, false
	}
	plan, err := st.best(profile)
	if err != nil {
		return partitioner.Pin{}, false
	}
	if plan.Reuse != nil {
		return partitioner.Pin{GPU: plan.Reuse.GPU, Start: plan.Reuse.Placement.Start}, true
	}
	if len(plan.Steps) == 0 {
		return partitioner.Pin{}, false
	}
	last := plan.Steps[len(plan.Steps)-1]
	return partitioner.Pin{GPU: last.GPU, Start: last.Placement.Start}, true
}

// profileRanks numbers every profile of the node, smallest first: by
// memory, then compute slices, then name. Memory leads because it is what a
// claim by capacity selects on ("at least 9Gi"): the first fit is then the
// profile with the least memory that holds the request, and among profiles
// of equal memory the one with the fewest slices. It is computed once per
// build.
func profileRanks(gpus []gpuInfo) map[string]int {
	var all []gpu.Profile
	seen := map[string]bool{}
	for _, g := range gpus {
		for _, pr := range g.profiles {
			if !seen[pr.Name] {
				seen[pr.Name] = true
				all = append(all, pr)
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.MemoryMiB != b.MemoryMiB {
			return a.MemoryMiB < b.MemoryMiB
		}
		if a.Slices != b.Slices {
			return a.Slices < b.Slices
		}
		return a.Name < b.Name
	})
	out := make(map[string]int, len(all))
	for i, pr := range all {
		out[pr.Name] = i
	}
	return out
}

func overlapsAny(p gpu.Placement, list []gpu.Placement) bool {
	for _, q := range list {
		if p.Overlaps(q) {
			return true
		}
	}
	return false
}

// device is one published device: its attributes, its memory as a
// capacity, the counters it consumes and, when unhealthy, its taint.
func device(st state, p placement) resourceapi.Device {
	g := gpuOf(st.gpus, p.gpu)
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
	num := func(n int) resourceapi.DeviceAttribute {
		v := int64(n)
		return resourceapi.DeviceAttribute{IntValue: &v}
	}
	consumed := map[string]resourceapi.Counter{counterSlices: counter(p.profile.Slices)}
	for s := p.at.Start; s < p.at.End(); s++ {
		consumed[slotCounter(s)] = counter(1)
	}
	if limitsCount(p.profile) {
		consumed[countCounter(p.profile.Name)] = counter(1)
	}
	d := resourceapi.Device{
		Name: deviceName(p.gpu, p.profile.Name, p.at.Start),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type":       str("mig"),
			"profile":    str(p.profile.Name),
			"slices":     num(p.profile.Slices),
			"memoryMiB":  num(int(p.profile.MemoryMiB)),
			"model":      str(g.model),
			"parentUUID": str(g.uuid),
			"gpu":        num(p.gpu),
			"start":      num(p.at.Start),
			"size":       num(p.at.Size),
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": {Value: *resource.NewQuantity(int64(p.profile.MemoryMiB)<<20, resource.BinarySI)},
		},
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: counterSetName(p.gpu), Counters: consumed}},
	}
	if reason := unhealthy(st, p); reason != "" {
		d.Taints = []resourceapi.DeviceTaint{{Key: DriverName + "/" + taintKey, Value: reason, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	}
	return d
}

// unhealthy says why a device is unhealthy: its GPU or an instance at its
// placement was marked by an Xid. Empty: healthy.
func unhealthy(st state, p placement) string {
	if st.gpuHealthy != nil && !st.gpuHealthy(p.gpu) {
		return "gpu-xid"
	}
	for _, in := range st.instances {
		if in.GPU == p.gpu && in.Profile == p.profile.Name && in.Placement == p.at && st.healthy != nil && !st.healthy(in) {
			return "xid"
		}
	}
	return ""
}

func gpuOf(gpus []gpuInfo, index int) gpuInfo {
	for _, g := range gpus {
		if g.index == index {
			return g
		}
	}
	return gpuInfo{index: index}
}
