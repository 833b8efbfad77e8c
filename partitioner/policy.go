package partitioner

import (
	"fmt"
	"sort"
	"strings"
)

// Candidate is one way to place a new instance: a GPU, a slot, and what it
// does to that GPU's reachability.
type Candidate struct {
	GPU    int
	Start  int
	Before int // layouts reachable on the GPU before
	After  int // layouts reachable on the GPU after (destroys and create applied)
	// UsedSlices is how many compute slices the GPU already uses.
	UsedSlices int
	// Destroys is how many idle instances must go first.
	Destroys int
	// Loss is how much mix-weighted capacity the GPU loses (see
	// geometry.Wanted.Capacity, weighted by the node's request mix): the node's
	// loss too, since no other GPU changes. It can be negative when
	// destroying idle instances frees more than the new one takes.
	Loss float64
	// GPULoss is the least mix-weighted headroom (geometry.Headroom) any
	// placement of this request on the candidate's GPU costs: how much the
	// node loses by choosing that GPU at all.
	GPULoss float64
	// NoDemand says the node has no demand to weigh yet (no request served,
	// none waiting): Loss and GPULoss then weigh every profile alike.
	NoDemand bool
}

// Policy orders candidate placements. Every policy first prefers plans that
// destroy fewer idle instances; Better breaks the remaining ties.
type Policy interface {
	Name() string
	// Better reports whether a should be chosen over b.
	Better(a, b Candidate) bool
}

// ReusePolicy is a Policy that also orders idle instances of the requested
// profile for reuse. A candidate for reuse scores the instance as if it were
// placed into its GPU with every idle instance counted as free space. A
// policy without it reuses by the reachability rule.
type ReusePolicy interface {
	BetterReuse(a, b Candidate) bool
}

func betterReuse(p Policy, a, b Candidate) bool {
	if rp, ok := p.(ReusePolicy); ok {
		return rp.BetterReuse(a, b)
	}
	return Reachability{}.BetterReuse(a, b)
}

// lossEpsilon is below any difference of mix-weighted capacity that
// matters; smaller ones are ties (float sums in different orders).
const lossEpsilon = 1e-9

// Migpro is the default policy: placement weighted by the workload mix.
//
// Profiles are weighted by how much they are wanted (the node's recent mix
// and pending requests; a profile only some GPUs of a mixed node offer
// weighs more on each of them) times their slices. It decides in two levels:
//
//   - the GPU whose best placement loses the least mix-weighted
//     headroom: per profile, the most instances the GPU could still take.
//     That packs by itself (a small instance on an empty GPU costs its
//     whole-GPU and half-GPU instances, which a busy GPU already lost), and
//     it keeps the only GPU that can still hold a wanted profile for it;
//   - on that GPU, the placement losing the least mix-weighted capacity:
//     the maximal layouts still reachable, each counted by the instances it
//     would add and by the share of slices and memory slots it uses, so a
//     placement that strands room (a 1g in the top slot, which only larger
//     profiles can pair with) counts against it. Only instances of profiles
//     the node was asked for use room: a layout filled by a profile no one
//     asks for (an A100's 1g.10gb at slot 6) is not full.
//
// Between two GPUs that lose the same headroom, the one already using more
// slices (idle instances included) wins before the capacity loss is
// compared: capacity is the loss of one GPU's layouts, and comparing it
// across GPUs spreads small requests over every busy GPU, so none empties
// for a waiting whole-GPU request (on two A100s at load 0.8 the 7g
// requests queued while both GPUs stayed half full; first-fit, which fills
// GPUs in a fixed order, drained one). The capacity loss then chooses the
// slot on that GPU. Remaining ties go to the lower GPU, then the lower
// slot.
//
// With no demand to weigh (no request served, none waiting) it places as
// Reachability does: a prior alone says nothing about what comes next, and
// the plain count keeps the most layouts open (the first 1g.5gb on an empty
// A100 goes to slot 6, not 0).
type Migpro struct{}

func (Migpro) Name() string { return "migpro" }

func (Migpro) Better(a, b Candidate) bool {
	if a.NoDemand {
		return Reachability{}.Better(a, b)
	}
	if a.Destroys != b.Destroys {
		return a.Destroys < b.Destroys
	}
	return Migpro{}.BetterReuse(a, b)
}

func (Migpro) BetterReuse(a, b Candidate) bool {
	if a.NoDemand {
		return Reachability{}.BetterReuse(a, b)
	}
	if better, ok := byLoss(a, b); ok {
		return better
	}
	if a.GPU != b.GPU {
		return a.GPU < b.GPU
	}
	return a.Start < b.Start
}

// Reachability is the plain reachability count, in two levels, kept to
// compare against: it counts reachable layouts and ignores the mix.
//
// Across GPUs it packs: a GPU that already holds instances is preferred to an
// empty one, so empty GPUs stay whole for large profiles (a 7g needs a whole
// GPU, and spreading small instances over every GPU is what strands it).
//
// Among the GPUs left, and among the slots of a GPU, it keeps the most
// layouts reachable. A node's reachable layouts are the product of its GPUs'
// reachable layouts, and a placement changes only its own GPU's factor, so
// the best placement is the one with the highest After/Before on its GPU.
// Remaining ties go to the GPU already using more slices, then the lower GPU
// index, then the higher slot (small instances fill from the top of the GPU,
// where they break the fewest layouts).
type Reachability struct{}

func (Reachability) Name() string { return "reachability" }

func (Reachability) Better(a, b Candidate) bool {
	if a.Destroys != b.Destroys {
		return a.Destroys < b.Destroys
	}
	if ea, eb := a.UsedSlices == 0, b.UsedSlices == 0; ea != eb {
		return eb
	}
	// Compare After/Before as cross products to stay exact.
	ka, kb := kept(a), kept(b)
	if l, r := ka[0]*kb[1], kb[0]*ka[1]; l != r {
		return l > r
	}
	if a.UsedSlices != b.UsedSlices {
		return a.UsedSlices > b.UsedSlices
	}
	if a.GPU != b.GPU {
		return a.GPU < b.GPU
	}
	return a.Start > b.Start
}

// BetterReuse keeps the most layouts reachable, then the lower GPU, then the
// higher slot.
func (Reachability) BetterReuse(a, b Candidate) bool {
	if a.After != b.After {
		return a.After > b.After
	}
	if a.GPU != b.GPU {
		return a.GPU < b.GPU
	}
	return a.Start > b.Start
}

// byLoss is Migpro's mix-weighted order: least lost headroom, then, on
// different GPUs, the GPU already using more slices, then least lost
// capacity (see Migpro); ok is false when all three tie. betterFree weighs
// idle instances by the same rule.
func byLoss(a, b Candidate) (better, ok bool) {
	if d := a.GPULoss - b.GPULoss; d < -lossEpsilon || d > lossEpsilon {
		return d < 0, true
	}
	if a.GPU != b.GPU && a.UsedSlices != b.UsedSlices {
		return a.UsedSlices > b.UsedSlices, true
	}
	if d := a.Loss - b.Loss; d < -lossEpsilon || d > lossEpsilon {
		return d < 0, true
	}
	return false, false
}

// kept is the fraction of layouts a candidate keeps, as (numerator,
// denominator). A GPU that reached nothing before loses nothing.
func kept(c Candidate) [2]int {
	if c.Before == 0 {
		return [2]int{1, 1}
	}
	return [2]int{c.After, c.Before}
}

// FirstFit is what dynamic MIG does without fragmentation scoring: the first
// GPU, then the lowest free slot. It exists as a baseline to measure against.
type FirstFit struct{}

func (FirstFit) Name() string { return "first-fit" }

func (FirstFit) Better(a, b Candidate) bool {
	if a.Destroys != b.Destroys {
		return a.Destroys < b.Destroys
	}
	if a.GPU != b.GPU {
		return a.GPU < b.GPU
	}
	return a.Start < b.Start
}

// BetterReuse takes the first idle instance: lowest GPU, then lowest slot.
func (FirstFit) BetterReuse(a, b Candidate) bool {
	if a.GPU != b.GPU {
		return a.GPU < b.GPU
	}
	return a.Start < b.Start
}

// DefaultPolicy is the policy New uses without WithPolicy.
var DefaultPolicy Policy = Migpro{}

var policies = map[string]Policy{
	Migpro{}.Name():       Migpro{},
	Reachability{}.Name(): Reachability{},
	FirstFit{}.Name():     FirstFit{},
}

// PolicyNames lists the known policies, the default first.
func PolicyNames() []string {
	names := []string{DefaultPolicy.Name()}
	for n := range policies {
		if n != DefaultPolicy.Name() {
			names = append(names, n)
		}
	}
	sort.Strings(names[1:])
	return names
}

// PolicyByName returns a policy by its name.
func PolicyByName(name string) (Policy, error) {
	p, ok := policies[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(PolicyNames(), ", "))
	}
	return p, nil
}
