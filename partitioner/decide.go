package partitioner

import (
	"fmt"
	"math/bits"
	"sort"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner/geometry"
)

// decide chooses how to meet a request for profile, in the order reuse,
// create in free space, destroy idle instances then create, or wait (an
// IdleAsFreePolicy weighs reuse and re-placement together). Each stage
// generates its options, admits those the reservation allows, and orders
// them. The caller holds p.mu.
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
	for _, st := range p.stages() {
		if plan, ok := p.decideStage(profile, pin, st); ok {
			return plan, nil
		}
	}
	return Plan{}, fmt.Errorf("%s: %w", profile, ErrMustWait)
}

// stage is one step of a decision: generate the ways to meet a request, and
// the order that ranks them.
type stage struct {
	generate func(profile string) []option
	better   func(a, b *option) bool
}

// stages are the policy's steps, tried in turn until one yields a plan: for
// an IdleAsFreePolicy one step over reuse and (re)placement together;
// otherwise reuse, then create in free space, then destroy idle instances
// and create.
func (p *Partitioner) stages() []stage {
	if fp, ok := p.policy.(IdleAsFreePolicy); ok && fp.IdleAsFree() {
		return []stage{{p.freeOptions, p.betterFree}}
	}
	return []stage{
		p.reuseStage(),
		p.createStage(false),
		p.createStage(true),
	}
}

// reuseStage reuses an idle instance of the profile, ordered by the
// policy's reuse order.
func (p *Partitioner) reuseStage() stage {
	return stage{generate: p.reuseOptions, better: func(a, b *option) bool { return betterReuse(p.policy, a.c, b.c) }}
}

// createStage creates in free space or, with reclaim, after destroying idle
// instances, ordered by the policy.
func (p *Partitioner) createStage(reclaim bool) stage {
	return stage{
		generate: func(profile string) []option { return p.createOptions(profile, reclaim) },
		better:   func(a, b *option) bool { return p.policy.Better(a.c, b.c) },
	}
}

// decideStage is one stage's decision, in three steps: generate the options,
// keep those the pin and the reservation allow (admit, once), and order
// them (choose).
func (p *Partitioner) decideStage(profile string, pin *Pin, st stage) (Plan, bool) {
	best, ok := choose(p.admit(st.generate(profile), profile, pin), st.better)
	if !ok {
		return Plan{}, false
	}
	return best.plan(profile), true
}

// option is one way to meet a request: reuse the idle instance reuse, or
// create the profile at placement at after destroying the idle records
// destroy (record keys, in the order to destroy them). Options of one group
// (group >= 0) share their GPULoss: the least among the group's options
// that are admitted.
type option struct {
	c       Candidate
	slot    *slot
	at      gpu.Placement
	reuse   *Instance
	destroy []int
	group   int
}

// plan is the plan that takes option o.
func (o *option) plan(profile string) Plan {
	plan := Plan{Profile: profile, GPU: o.c.GPU, Reuse: o.reuse, Reachable: o.c.After, Before: o.c.Before, Loss: o.c.Loss, GPULoss: o.c.GPULoss}
	if o.reuse != nil {
		return plan
	}
	for _, k := range o.destroy {
		r := o.slot.records[k]
		plan.Steps = append(plan.Steps, Step{Kind: StepDestroy, GPU: r.GPU, Profile: r.Profile, Placement: r.Placement, GIID: r.GIID})
	}
	plan.Steps = append(plan.Steps, Step{Kind: StepCreate, GPU: o.c.GPU, Profile: profile, Placement: o.at})
	return plan
}

// choose gives each grouped option its group's least GPULoss, then returns
// the option better ranks first (the earliest among equals).
func choose(opts []option, better func(a, b *option) bool) (*option, bool) {
	least := map[int]float64{}
	for _, o := range opts {
		if v, ok := least[o.group]; o.group >= 0 && (!ok || o.c.GPULoss < v) {
			least[o.group] = o.c.GPULoss
		}
	}
	best := -1
	for i := range opts {
		if opts[i].group >= 0 {
			opts[i].c.GPULoss = least[opts[i].group]
		}
		if best < 0 || better(&opts[i], &opts[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil, false
	}
	return &opts[best], true
}

// reuseOptions are the idle instances of the profile, each scored as a
// placement into its GPU with every idle instance counted as free space.
func (p *Partitioner) reuseOptions(profile string) []option {
	var out []option
	weights := p.shapeWeights()
	for i, s := range p.slots {
		idle := s.idleKeys()
		var committed geometry.State
		used := -1 // the GPU's states, worked out at its first idle instance of the profile
		for key := range idle {
			r := s.records[key]
			if r.Profile != profile || !r.Complete() {
				continue
			}
			if used < 0 {
				committed, used = s.state(idle), s.state(nil).Slices
			}
			if c, ok := s.reuseCandidate(committed, r, weights[i], p.mix.wanted[i], used); ok {
				c.NoDemand = p.mix.none()
				out = append(out, option{c: c, slot: s, at: r.Placement, reuse: r, group: -1})
			}
		}
	}
	return out
}

// reuseCandidate scores reusing r as a placement into the slot's committed
// (non-idle) state, its capacity weighed by weight for the wanted shapes.
func (s *slot) reuseCandidate(committed geometry.State, r *Instance, weight []float64, wanted *geometry.Wanted, used int) (Candidate, bool) {
	o, ok := s.geo.OptionAt(r.Profile, r.Placement.Start)
	if !ok {
		return Candidate{}, false
	}
	if r.State != Idle { // already counted as committed
		committed = s.geo.Remove(committed, o.Index)
	}
	after := s.geo.Add(committed, o.Index)
	return Candidate{GPU: r.GPU, Start: r.Placement.Start, Before: s.geo.Reachable(committed), After: s.geo.Reachable(after),
		UsedSlices: used, Loss: wanted.Capacity(committed, weight) - wanted.Capacity(after, weight),
		GPULoss: s.geo.Headroom(committed, weight) - s.geo.Headroom(after, weight)}, true
}

// createOptions are the placements for a new instance: in free space only,
// or, with reclaim, after destroying each set of one GPU's idle instances.
// The options of one GPU and destroy set form a group.
func (p *Partitioner) createOptions(profile string, reclaim bool) []option {
	var out []option
	group := 0
	noDemand := p.mix.none()
	weights := p.shapeWeights()
	for i, s := range p.slots {
		pr, ok := s.profiles[profile]
		if !ok {
			continue
		}
		current := s.state(nil)
		before := s.geo.Reachable(current)
		capBefore := p.capacity(i, current)
		roomBefore := s.geo.Headroom(current, weights[i])
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
			for _, o := range s.geo.Candidates(st, profile) {
				next := s.geo.Add(st, o.Index)
				out = append(out, option{
					c: Candidate{GPU: s.dev.Index(), Start: o.Placement.Start, Before: before, After: s.geo.Reachable(next),
						UsedSlices: current.Slices, Destroys: len(skip), Loss: capBefore - p.capacity(i, next),
						GPULoss: roomBefore - s.geo.Headroom(next, weights[i]), NoDemand: noDemand},
					slot: s, at: o.Placement, destroy: keys, group: group,
				})
			}
			group++
		}
	}
	return out
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
			if c, ok := s.reuseCandidate(committed, r, weights[i], p.mix.wanted[i], used); ok {
				c.NoDemand = p.mix.none()
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
