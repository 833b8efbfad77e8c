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
}

// Policy orders candidate placements. Every policy first prefers plans that
// destroy fewer idle instances; Better breaks the remaining ties.
type Policy interface {
	Name() string
	// Better reports whether a should be chosen over b.
	Better(a, b Candidate) bool
}

// Reachability is migpro's policy, in two levels.
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

var policies = map[string]Policy{
	Reachability{}.Name(): Reachability{},
	FirstFit{}.Name():     FirstFit{},
}

// PolicyByName returns a policy by its name.
func PolicyByName(name string) (Policy, error) {
	p, ok := policies[name]
	if !ok {
		names := make([]string, 0, len(policies))
		for n := range policies {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(names, ", "))
	}
	return p, nil
}
