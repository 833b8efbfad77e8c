package geometry

import (
	"math/bits"
	"sync"
)

// reachTable holds every valid state of the counted shapes, on a GPU whose
// blocked slots and slices are taken by instances outside the counted set,
// with the number of maximal layouts that contain it. A MIG GPU can create
// instances in any order, so a maximal layout is reachable from a state
// exactly when it is a superset of it.
type reachTable struct {
	maximal []uint64          // masks of the maximal layouts
	count   map[uint64]uint32 // valid counted state -> reachable maximal layouts
}

// blocked is the room that uncounted instances take away.
type blocked struct {
	slots  uint16
	slices int
}

// reachCache memoises one table per blocked region; the unblocked table is
// built eagerly in New and the rest on first use.
type reachCache struct {
	countedMask uint64
	// unblocked is the table with nothing blocked, the common case; it never
	// changes after New, so it is read without the lock.
	unblocked *reachTable
	mu        sync.Mutex
	tables    map[blocked]*reachTable // the other blocked regions
}

func newReachCache(g *Geometry) *reachCache {
	c := &reachCache{tables: map[blocked]*reachTable{}}
	for _, o := range g.Options {
		if g.Shapes[o.Shape].Counted {
			c.countedMask |= 1 << o.Index
		}
	}
	c.unblocked = buildReachTable(g, c.countedMask, blocked{})
	return c
}

func (c *reachCache) table(g *Geometry, b blocked) *reachTable {
	if b == (blocked{}) {
		return c.unblocked
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tables[b]
	if !ok {
		t = buildReachTable(g, c.countedMask, b)
		c.tables[b] = t
	}
	return t
}

func buildReachTable(g *Geometry, counted uint64, b blocked) *reachTable {
	t := &reachTable{count: map[uint64]uint32{}}
	start := State{Slots: b.slots, Slices: b.slices}
	// Enumerate each valid state once: options are only ever added in
	// increasing index order.
	var walk func(s State, from int)
	walk = func(s State, from int) {
		t.count[s.Mask] = 0
		maximal := true
		for o := 0; o < len(g.Options); o++ {
			if counted&(1<<o) == 0 || !g.CanAdd(s, o) {
				continue
			}
			maximal = false
			if o >= from {
				walk(g.Add(s, o), o+1)
			}
		}
		if maximal {
			t.maximal = append(t.maximal, s.Mask)
		}
	}
	walk(start, 0)
	// Each maximal layout adds one to every subset of itself, and every
	// subset of a valid state is valid, so this fills the whole table.
	for _, m := range t.maximal {
		for sub := m; ; sub = (sub - 1) & m {
			t.count[sub]++
			if sub == 0 {
				break
			}
		}
	}
	return t
}

// Reachable is how many maximal layouts of the counted shapes can still be
// reached from s by creating instances. Instances of uncounted shapes take
// their slots and slices out of the GPU: layouts are counted in the room that
// is left.
func (g *Geometry) Reachable(s State) int {
	c := g.reach
	counted := s.Mask & c.countedMask
	var b blocked
	for m := s.Mask &^ c.countedMask; m != 0; m &= m - 1 {
		o := &g.Options[bits.TrailingZeros64(m)]
		b.slots |= o.slotMask
		b.slices += g.Shapes[o.Shape].Slices
	}
	return int(c.table(g, b).count[counted]) // an invalid state reads as 0
}
