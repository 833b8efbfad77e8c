package partitioner

import (
	"strings"

	"github.com/migpro/migpro/partitioner/geometry"
)

// Widening in place. Some profiles share their memory slots and differ in
// compute slices: an A100's 3g.20gb and 4g.20gb both take memory slots 0-3
// at slot 0, and an H100's 3g.40gb and 4g.40gb alike. A 3g.20gb at slot 0
// leaves compute slice 3 with no memory slot, so nothing can use it while
// the 3g runs (the A100's most common fragmentation wait in the replay is a
// 1g.5gb waiting beside 3g@0 2g@4 1g@6, docs/replay-round7.md). A caller
// that takes any instance holding its profile (AllocateHolding) is given
// the wider profile there instead: the same memory, the slice that would
// have idled, and nothing taken from any other request. Exact requests
// (Allocate, Plan, the cluster's per-profile resources) keep their profile.

// widenInPlace turns a plan that creates profile into one that makes the
// profile with the same memory, the same memory slots at the same start and
// the most compute slices (then the first by name; a "+me" profile only to
// another), when it fits there after the plan's destroys; an
// idle instance of that profile at that very placement, which the plan
// would destroy, is reused instead. A plan that reuses an instance is kept:
// widening it would cost two NVML steps; so is one where a reservation on
// the GPU would not admit the wider profile. The caller holds p.mu.
func (p *Partitioner) widenInPlace(profile string, plan Plan) Plan {
	n := len(plan.Steps)
	if plan.Reuse != nil || n == 0 || plan.Steps[n-1].Kind != StepCreate {
		return plan
	}
	create := plan.Steps[n-1]
	s := p.slotOf(create.GPU)
	own, ok := s.profiles[profile]
	if !ok {
		return plan
	}
	mask := geometry.SlotMask(create.Placement)
	_, kind, _ := strings.Cut(profile, "+") // a media-extension profile widens only to another
	wide, wideSlices := "", own.Slices
	for name, pr := range s.profiles {
		if _, k, _ := strings.Cut(name, "+"); k != kind || pr.MemoryMiB != own.MemoryMiB ||
			pr.Slices < wideSlices || pr.Slices == wideSlices && (wide == "" || name > wide) {
			continue
		}
		if o, ok := s.geo.OptionAt(name, create.Placement.Start); ok && geometry.SlotMask(o.Placement) == mask {
			wide, wideSlices = name, pr.Slices
		}
	}
	if wide == "" || !p.reservationAllows(s, wide) || !p.reservationClear(s, wide, create.Placement) {
		return plan // none, or a reservation on the GPU needs the slice
	}
	skip := map[int]bool{}
	for _, st := range plan.Steps[:n-1] {
		skip[st.GIID] = true
		if r := s.records[st.GIID]; r.Profile == wide && r.Placement.Start == create.Placement.Start {
			return Plan{Profile: wide, Asked: profile, GPU: plan.GPU, Reuse: r, Reachable: plan.Reachable, Before: plan.Before,
				Loss: plan.Loss, GPULoss: plan.GPULoss}
		}
	}
	if profileCount(s, wide, skip) >= s.profiles[wide].MaxCount {
		return plan
	}
	for _, o := range s.geo.Candidates(s.state(skip), wide) {
		if o.Placement.Start == create.Placement.Start {
			create.Profile, create.Placement = wide, o.Placement
			out := plan
			out.Steps = append(append([]Step(nil), plan.Steps[:n-1]...), create)
			out.Profile, out.Asked = wide, profile
			return out
		}
	}
	return plan
}
