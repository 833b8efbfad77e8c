package geometry

import (
	"math"
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
	// weight is, per valid counted state, the sums over the maximal layouts
	// reachable from it that demand-weighted capacity is built from (see
	// Wanted.Capacity).
	weight map[uint64]*layoutSums
}

// layoutSums sums, over the maximal layouts L reachable from a state, the
// fraction of compute slices L uses (used) and that fraction times L's
// instance count of each shape (byShape).
type layoutSums struct {
	used    float32
	byShape [maxShapes]float32
	// most is, per shape, the most instances of it any reachable layout
	// holds.
	most [maxShapes]uint8
}

// blocked is the room that uncounted instances take away.
type blocked struct {
	slots  uint16
	slices int
}

// tableKey names one table: the room blocked, and the shapes whose
// instances count as using room when a layout is weighed (see layoutWeight).
type tableKey struct {
	blocked
	wanted ShapeSet
}

// reachCache memoises one table per blocked region and wanted set; the
// unblocked table with every shape wanted is built eagerly in New and the
// rest on first use.
type reachCache struct {
	countedMask uint64
	all         ShapeSet // every shape
	// unblocked is the table with nothing blocked and every shape wanted,
	// the common case; it never changes after New, so it is read without
	// the lock.
	unblocked *reachTable
	mu        sync.Mutex
	tables    map[tableKey]*reachTable // the others
}

func newReachCache(g *Geometry) *reachCache {
	c := &reachCache{tables: map[tableKey]*reachTable{}}
	for _, o := range g.Options {
		if g.Shapes[o.Shape].Counted {
			c.countedMask |= 1 << o.Index
		}
	}
	for _, sh := range g.Shapes {
		c.all |= 1 << sh.Index
	}
	c.unblocked = buildReachTable(g, c.countedMask, tableKey{wanted: c.all})
	return c
}

// table is the table of blocked region b, every shape wanted.
func (c *reachCache) table(g *Geometry, b blocked) *reachTable {
	return c.tableFor(g, tableKey{b, c.all})
}

func (c *reachCache) tableFor(g *Geometry, k tableKey) *reachTable {
	k.wanted &= c.all
	if k == (tableKey{wanted: c.all}) {
		return c.unblocked
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tables[k]
	if !ok {
		t = buildReachTable(g, c.countedMask, k)
		c.tables[k] = t
	}
	return t
}

func buildReachTable(g *Geometry, counted uint64, k tableKey) *reachTable {
	b := k.blocked
	t := &reachTable{count: map[uint64]uint32{}, weight: map[uint64]*layoutSums{}}
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
		var n [maxShapes]float32
		slices, slots := b.slices, b.slots
		for o := m; o != 0; o &= o - 1 {
			opt := &g.Options[bits.TrailingZeros64(o)]
			n[opt.Shape]++
			if k.wanted&(1<<opt.Shape) != 0 {
				slices += g.Shapes[opt.Shape].Slices
				slots |= opt.slotMask
			}
		}
		frac := layoutWeight(g, slices, bits.OnesCount16(slots))
		for sub := m; ; sub = (sub - 1) & m {
			t.count[sub]++
			w := t.weight[sub]
			if w == nil {
				w = &layoutSums{}
				t.weight[sub] = w
			}
			w.used += frac
			for sh := range g.Shapes {
				w.byShape[sh] += frac * n[sh]
				w.most[sh] = max(w.most[sh], uint8(n[sh]))
			}
			if sub == 0 {
				break
			}
		}
	}
	return t
}

// layoutPower sharpens how much less a layout that strands compute slices
// or memory slots counts (see layoutWeight). Over the online streams of
// docs/replay-results.md, 1 made migpro worse than first-fit (geomean JCT 0.998×)
// and 4 to 8 were alike (1.023×, 1.029×).
const layoutPower = 4.0

// layoutWeight is how much a maximal layout counts: the share of compute
// slices and of memory slots it uses, raised to layoutPower, so layouts
// that strand room (a 1g at the top slot leaves a slot only larger
// profiles could use) count for little. Only instances of wanted shapes
// (and the blocked room) use room: a layout that fills the GPU only with
// an instance no one asks for (an A100's 1g.10gb at slot 6, the one
// small instance that reaches memory slot 7) does not count as full.
func layoutWeight(g *Geometry, slices, slots int) float32 {
	f := float64(slices) / float64(g.Slices) * float64(slots) / float64(g.Slots)
	return float32(math.Pow(f, layoutPower))
}

// Wanted weighs capacity for one set of wanted shapes (Geometry.Wanting).
type Wanted struct {
	g         *Geometry
	set       ShapeSet
	unblocked *reachTable // the table with nothing blocked, looked up once
}

// Wanting is the capacity of this geometry for the wanted shapes, with its
// common table looked up once: a decision asks for many states' capacity.
func (g *Geometry) Wanting(wanted ShapeSet) *Wanted {
	return &Wanted{g: g, set: wanted, unblocked: g.reach.tableFor(g, tableKey{wanted: wanted})}
}

// Capacity is the demand-weighted capacity left on a GPU in state s: over
// every maximal layout reachable from s, the instances that layout would
// still add, each shape's counted by weight[shape] (how much that shape is
// wanted, times its slices), and each layout scaled by the share of the
// GPU's compute slices and memory slots that the wanted shapes' instances
// use (layoutWeight): layouts that strand room count less, and room held by
// a shape no one asks for is stranded room, not use. With every shape
// wanted (Geometry.Wanting(all)) every instance counts as use.
// The sum is divided by the number of maximal layouts of the empty GPU, so
// an empty GPU's capacity is the mean over all its layouts and capacities of
// GPUs of different models compare. Uncounted shapes and invalid states
// have none.
func (wn *Wanted) Capacity(s State, weight []float64) float64 {
	g, c := wn.g, wn.g.reach
	t := wn.unblocked
	if b := g.blockedBy(s); b != (blocked{}) {
		t = c.tableFor(g, tableKey{b, wn.set})
	}
	w := t.weight[s.Mask&c.countedMask]
	if w == nil {
		return 0
	}
	total := 0.0
	for sh, wt := range weight {
		if wt == 0 || sh >= len(g.Shapes) || !g.Shapes[sh].Counted {
			continue
		}
		total += wt * (float64(w.byShape[sh]) - float64(s.counts[sh])*float64(w.used))
	}
	return total / float64(len(c.unblocked.maximal))
}

// Headroom is the demand-weighted count of instances a GPU in state s can
// still take: per counted shape, the most instances any reachable layout
// adds, times weight[shape]. Unlike Capacity it does not care how those
// instances combine; it is what a node-level choice of GPU compares, so a
// GPU that alone can still hold a wanted shape is kept for it.
func (g *Geometry) Headroom(s State, weight []float64) float64 {
	c := g.reach
	w := c.table(g, g.blockedBy(s)).weight[s.Mask&c.countedMask]
	if w == nil {
		return 0
	}
	total := 0.0
	for sh, wt := range weight {
		if wt == 0 || sh >= len(g.Shapes) || !g.Shapes[sh].Counted {
			continue
		}
		total += wt * float64(int(w.most[sh])-int(s.counts[sh]))
	}
	return total
}

// blockedBy is the room the uncounted instances of s take.
func (g *Geometry) blockedBy(s State) blocked {
	var b blocked
	for m := s.Mask &^ g.reach.countedMask; m != 0; m &= m - 1 {
		o := &g.Options[bits.TrailingZeros64(m)]
		b.slots |= o.slotMask
		b.slices += g.Shapes[o.Shape].Slices
	}
	return b
}

// Reachable is how many maximal layouts of the counted shapes can still be
// reached from s by creating instances. Instances of uncounted shapes take
// their slots and slices out of the GPU: layouts are counted in the room that
// is left.
func (g *Geometry) Reachable(s State) int {
	c := g.reach
	return int(c.table(g, g.blockedBy(s)).count[s.Mask&c.countedMask]) // an invalid state reads as 0
}
