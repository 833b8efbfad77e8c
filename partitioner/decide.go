package partitioner

import (
	"fmt"
	"math/bits"
	"sort"

	"github.com/migpro/migpro/partitioner/geometry"
)

// decide chooses how to meet a request for profile, in the order reuse,
// create in free space, destroy idle instances then create, or wait. The
// caller holds p.mu.
func (p *Partitioner) decide(profile string) (Plan, error) { return p.decidePinned(profile, nil) }

// Pin restricts a request to one GPU and slot, for what-if questions such as
// "what does a 1g.5gb at slot 3 cost?".
type Pin struct {
	GPU, Start int
}

func (pin *Pin) allows(gpuIndex, start int) bool {
	return pin == nil || (pin.GPU == gpuIndex && pin.Start == start)
}

func (p *Partitioner) decidePinned(profile string, pin *Pin) (Plan, error) {
	offered := false
	for _, s := range p.slots {
		if _, ok := s.profiles[profile]; ok {
			offered = true
		}
	}
	if !offered {
		return Plan{}, fmt.Errorf("%s: %w (offered: %v)", profile, ErrUnknownProfile, p.Profiles())
	}
	if fp, ok := p.policy.(IdleAsFreePolicy); ok && fp.IdleAsFree() {
		if plan, ok := p.planFree(profile, pin); ok {
			return plan, nil
		}
		return Plan{}, fmt.Errorf("%s: %w", profile, ErrMustWait)
	}
	if plan, ok := p.planReuse(profile, pin); ok {
		return plan, nil
	}
	if plan, ok := p.planCreate(profile, pin, false); ok {
		return plan, nil
	}
	if plan, ok := p.planCreate(profile, pin, true); ok {
		return plan, nil
	}
	return Plan{}, fmt.Errorf("%s: %w", profile, ErrMustWait)
}

// planReuse picks the idle instance of the profile the policy ranks best for
// reuse. Each is scored as a placement into the slot with every idle instance
// counted as free space.
func (p *Partitioner) planReuse(profile string, pin *Pin) (Plan, bool) {
	var best *Instance
	var bestC Candidate
	weights := p.shapeWeights()
	for i, s := range p.slots {
		if !p.reservationAllows(s, profile) {
			continue
		}
		idle := s.idleKeys()
		committed := s.state(idle)
		used := s.state(nil).Slices
		for key := range idle {
			r := s.records[key]
			if r.Profile != profile || !r.Complete() || !pin.allows(r.GPU, r.Placement.Start) || !p.reservationClear(s, profile, r.Placement) {
				continue
			}
			c, ok := s.reuseCandidate(committed, r, weights[i], used)
			c.NoDemand = p.demand.none()
			if ok && (best == nil || betterReuse(p.policy, c, bestC)) {
				best, bestC = r, c
			}
		}
	}
	if best == nil {
		return Plan{}, false
	}
	return Plan{Profile: profile, GPU: best.GPU, Reuse: best, Reachable: bestC.After, Before: bestC.Before, Loss: bestC.Loss, GPULoss: bestC.GPULoss}, true
}

// reuseCandidate scores reusing r as a placement into the slot's committed
// (non-idle) state.
func (s *slot) reuseCandidate(committed geometry.State, r *Instance, weight []float64, used int) (Candidate, bool) {
	o, ok := s.geo.OptionAt(r.Profile, r.Placement.Start)
	if !ok {
		return Candidate{}, false
	}
	if r.State != Idle { // already counted as committed
		committed = s.geo.Remove(committed, o.Index)
	}
	after := s.geo.Add(committed, o.Index)
	return Candidate{GPU: r.GPU, Start: r.Placement.Start, Before: s.geo.Reachable(committed), After: s.geo.Reachable(after),
		UsedSlices: used, Loss: s.geo.Capacity(committed, weight) - s.geo.Capacity(after, weight),
		GPULoss: s.geo.Headroom(committed, weight) - s.geo.Headroom(after, weight)}, true
}

// choice is a candidate placement together with the idle records it destroys.
type choice struct {
	Candidate
	slot    *slot
	destroy []int // record keys
}

// planCreate finds the best placement for a new instance: in free space only,
// or, with reclaim, after destroying the fewest idle instances of one GPU.
func (p *Partitioner) planCreate(profile string, pin *Pin, reclaim bool) (Plan, bool) {
	var best *choice
	noDemand := p.demand.none()
	consider := func(c choice) {
		c.NoDemand = noDemand
		if best == nil || p.policy.Better(c.Candidate, best.Candidate) {
			cc := c
			best = &cc
		}
	}
	weights := p.shapeWeights()
	for i, s := range p.slots {
		pr, ok := s.profiles[profile]
		if !ok || !p.reservationAllows(s, profile) {
			continue
		}
		current := s.state(nil)
		before := s.geo.Reachable(current)
		capBefore := s.geo.Capacity(current, weights[i])
		roomBefore := s.geo.Headroom(current, weights[i])
		var batch []choice
		for _, skip := range p.destroySets(s, reclaim) {
			if profileCount(s, profile, skip) >= pr.MaxCount {
				continue
			}
			st, keys := current, []int(nil)
			if len(skip) > 0 {
				st = s.state(skip)
				for k := range skip {
					keys = append(keys, k)
				}
				sort.Ints(keys)
			}
			batch = batch[:0]
			gpuLoss := 0.0
			for _, o := range s.geo.Candidates(st, profile) {
				if !pin.allows(s.dev.Index(), o.Placement.Start) || !p.reservationClear(s, profile, o.Placement) {
					continue
				}
				next := s.geo.Add(st, o.Index)
				c := choice{
					Candidate: Candidate{GPU: s.dev.Index(), Start: o.Placement.Start, Before: before, After: s.geo.Reachable(next),
						UsedSlices: current.Slices, Destroys: len(skip), Loss: capBefore - s.geo.Capacity(next, weights[i])},
					slot: s, destroy: keys,
				}
				loss := roomBefore - s.geo.Headroom(next, weights[i])
				if len(batch) == 0 || loss < gpuLoss {
					gpuLoss = loss
				}
				batch = append(batch, c)
			}
			for _, c := range batch {
				c.GPULoss = gpuLoss
				consider(c)
			}
		}
	}
	if best == nil {
		return Plan{}, false
	}
	plan := Plan{Profile: profile, GPU: best.GPU, Reachable: best.After, Before: best.Before, Loss: best.Loss, GPULoss: best.GPULoss}
	for _, k := range best.destroy {
		r := best.slot.records[k]
		plan.Steps = append(plan.Steps, Step{Kind: StepDestroy, GPU: r.GPU, Profile: r.Profile, Placement: r.Placement, GIID: r.GIID})
	}
	opt, _ := best.slot.geo.OptionAt(profile, best.Start)
	plan.Steps = append(plan.Steps, Step{Kind: StepCreate, GPU: best.GPU, Profile: profile, Placement: opt.Placement})
	return plan, true
}

// destroySets lists the sets of idle records that may be destroyed: only the
// empty set without reclaim, otherwise every non-empty subset of the idle
// records. Smaller sets win in Policy.Better, so the plan destroys as few as
// it can. A GPU holds at most a handful of instances, so this stays small.
func (p *Partitioner) destroySets(s *slot, reclaim bool) []map[int]bool {
	if !reclaim {
		return []map[int]bool{nil}
	}
	var idle []int
	for key := range s.idleKeys() {
		idle = append(idle, key)
	}
	sort.Ints(idle)
	var sets []map[int]bool
	for m := uint(1); m < 1<<len(idle); m++ {
		set := make(map[int]bool, bits.OnesCount(m))
		for i, key := range idle {
			if m&(1<<i) != 0 {
				set[key] = true
			}
		}
		sets = append(sets, set)
	}
	return sets
}

// profileCount counts a profile's instances on a slot, leaving skip out: the
// driver caps each profile's count (e.g. one 1g.5gb+me per GPU).
func profileCount(s *slot, profile string, skip map[int]bool) int {
	n := 0
	for key, r := range s.records {
		if r.Profile == profile && !skip[key] {
			n++
		}
	}
	return n
}

// CheckPin reports whether a pinned request names a GPU of this node and a
// legal slot of the profile on it.
func (p *Partitioner) CheckPin(profile string, pin Pin) error {
	for _, s := range p.slots {
		if s.dev.Index() != pin.GPU {
			continue
		}
		if _, ok := s.geo.OptionAt(profile, pin.Start); !ok {
			var starts []int
			if sh, ok := s.geo.ShapeOf(profile); ok {
				for _, pl := range sh.Placements {
					starts = append(starts, pl.Start)
				}
			}
			return fmt.Errorf("%s cannot start at slot %d on GPU %d (legal starts: %v)", profile, pin.Start, pin.GPU, starts)
		}
		return nil
	}
	return fmt.Errorf("no GPU %d on this node (%d GPUs)", pin.GPU, len(p.slots))
}

// RankReuse orders the given instances of a profile (by UUID) best first for
// reuse, as the policy ranks them, counting every other idle instance as free
// space. Unknown UUIDs are left out.
func (p *Partitioner) RankReuse(profile string, uuids []string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	type scored struct {
		uuid string
		c    Candidate
	}
	want := map[string]bool{}
	for _, u := range uuids {
		want[u] = true
	}
	weights := p.shapeWeights()
	var list []scored
	for i, s := range p.slots {
		committed := s.state(s.idleKeys())
		used := s.state(nil).Slices
		for _, r := range s.records {
			if !want[r.UUID] || r.Profile != profile {
				continue
			}
			if c, ok := s.reuseCandidate(committed, r, weights[i], used); ok {
				c.NoDemand = p.demand.none()
				list = append(list, scored{r.UUID, c})
			}
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return betterReuse(p.policy, list[i].c, list[j].c) })
	out := make([]string, len(list))
	for i, l := range list {
		out[i] = l.uuid
	}
	return out
}

// idleKeys is the set of records that are idle: free to reuse or destroy.
func (s *slot) idleKeys() map[int]bool {
	idle := map[int]bool{}
	for key, r := range s.records {
		if r.State == Idle {
			idle[key] = true
		}
	}
	return idle
}
