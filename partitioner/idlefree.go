package partitioner

import (
	"sort"

	"github.com/migpro/migpro/partitioner/geometry"
)

// IdleAsFreePolicy is a Policy that treats idle instances as free space:
// they hold no work, so a request is placed where it is best for the layout
// counting only instances in use (and pending work), and the idle instances
// in the way are destroyed first (defragmentation). Reusing an idle
// instance is one candidate among the others, taken when it is as good.
type IdleAsFreePolicy interface {
	Policy
	IdleAsFree() bool
}

// IdleAsFree makes migpro re-place idle instances.
func (Migpro) IdleAsFree() bool { return true }

// freeOptions are the options of an IdleAsFreePolicy: reuse and create,
// each scored against its GPU's committed (non-idle) state, a create
// destroying the idle instances in its way (victims). A GPU's options form
// one group.
func (p *Partitioner) freeOptions(profile string) []option {
	var out []option
	weights := p.shapeWeights()
	for i, s := range p.slots {
		pr, ok := s.profiles[profile]
		if !ok {
			continue
		}
		idle := s.idleKeys()
		committed := s.state(idle)
		used := s.state(nil).Slices
		reach := s.geo.Reachable(committed)
		capB, roomB := p.capacity(i, committed), s.geo.Headroom(committed, weights[i])
		noDemand := p.mix.none()
		score := func(after geometry.State, start, destroys int) Candidate {
			return Candidate{GPU: s.dev.Index(), Start: start, Before: reach, After: s.geo.Reachable(after), UsedSlices: used,
				Destroys: destroys, Loss: capB - p.capacity(i, after), GPULoss: roomB - s.geo.Headroom(after, weights[i]),
				NoDemand: noDemand}
		}
		for key := range idle {
			r := s.records[key]
			if r.Profile != profile || !r.Complete() {
				continue
			}
			o, ok := s.geo.OptionAt(r.Profile, r.Placement.Start)
			if !ok {
				continue
			}
			out = append(out, option{c: score(s.geo.Add(committed, o.Index), r.Placement.Start, 0), slot: s, at: r.Placement, reuse: r, group: i})
		}
		for _, o := range s.geo.Candidates(committed, profile) {
			victims, ok := s.victims(committed, idle, o, profile, pr.MaxCount)
			if !ok {
				continue
			}
			out = append(out, option{c: score(s.geo.Add(committed, o.Index), o.Placement.Start, len(victims)), slot: s, at: o.Placement,
				destroy: victims, group: i})
		}
	}
	return out
}

// betterFree ranks an IdleAsFreePolicy's options: while nothing waits,
// reuse before create; then Migpro's byLoss (least lost headroom, the GPU
// using more slices, least lost capacity; only with a mix to weigh), reuse
// before create, fewest destroyed, then the policy's own order.
func (p *Partitioner) betterFree(a, b *option) bool {
	// While nothing waits, an idle instance of the profile is reused
	// before another is made: a create costs NVML time the request
	// waits for, for a better place no waiting request needs. With
	// requests waiting, the losses decide (an idle instance in a
	// waiting request's way is re-placed).
	if (a.reuse != nil) != (b.reuse != nil) && p.mix.npend == 0 {
		return a.reuse != nil
	}
	// With no mix to weigh the losses say nothing; the policy decides
	// after destroys (Migpro then as Reachability).
	if better, ok := byLoss(a.c, b.c); ok && !a.c.NoDemand {
		return better
	}
	if (a.reuse != nil) != (b.reuse != nil) {
		return a.reuse != nil
	}
	if a.c.Destroys != b.c.Destroys {
		return a.c.Destroys < b.c.Destroys
	}
	return p.policy.Better(a.c, b.c)
}

// victims are the idle records that must go for option o to be created on
// top of the committed state: those overlapping it, then, smallest first,
// as many more as the GPU's compute slices and the profile's instance count
// need. It reports false when even destroying every idle record is not
// enough.
func (s *slot) victims(committed geometry.State, idle map[int]bool, o geometry.Option, profile string, maxCount int) ([]int, bool) {
	need := o.Placement
	var out, rest []int
	for key := range idle {
		r := s.records[key]
		if r.Placement.Overlaps(need) {
			out = append(out, key)
		} else {
			rest = append(rest, key)
		}
	}
	sort.Ints(out)
	sort.Slice(rest, func(a, b int) bool {
		ra, rb := s.records[rest[a]], s.records[rest[b]]
		if sa, sb := s.profiles[ra.Profile].Slices, s.profiles[rb.Profile].Slices; sa != sb {
			return sa < sb
		}
		return rest[a] < rest[b]
	})
	slices := committed.Slices + s.profiles[profile].Slices
	count := 1
	for _, r := range s.records {
		if r.Profile == profile && !idle[r.GIID] && r.State != Idle {
			count++
		}
	}
	var kept []int
	for _, key := range rest {
		r := s.records[key]
		slices += s.profiles[r.Profile].Slices
		if r.Profile == profile {
			count++
		}
		kept = append(kept, key)
	}
	// Destroy kept ones, smallest first, until the slices and count fit.
	for len(kept) > 0 && (slices > s.geo.Slices || count > maxCount) {
		// Prefer one of the same profile when the count is what fails.
		pick := 0
		if count > maxCount {
			for k, key := range kept {
				if s.records[key].Profile == profile {
					pick = k
					break
				}
			}
		}
		r := s.records[kept[pick]]
		slices -= s.profiles[r.Profile].Slices
		if r.Profile == profile {
			count--
		}
		out = append(out, kept[pick])
		kept = append(kept[:pick], kept[pick+1:]...)
	}
	return out, slices <= s.geo.Slices && count <= maxCount
}
