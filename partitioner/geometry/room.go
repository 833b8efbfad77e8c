package geometry

import (
	"math/bits"
	"sync"

	"github.com/migpro/migpro/gpu"
)

// SlotMask is a placement's memory slots as a bit mask (bit i: slot i).
func SlotMask(p gpu.Placement) uint16 { return slotMask(p) }

// SlotMasks lists a profile's legal placements as memory-slot masks, in
// ascending slot order; nil for a profile the model does not offer. The
// slice is shared: callers must not change it.
func (g *Geometry) SlotMasks(profile string) []uint16 {
	s, ok := g.ShapeOf(profile)
	if !ok {
		return nil
	}
	return s.masks
}

// MayFit reports whether profile could be placed beside instances holding
// the memory slots held and the compute slices slices: enough free slices
// and a legal placement clear of held. It is necessary, not sufficient (the
// instance count limit is not checked), and lets callers skip asking for a
// plan whose answer can only be "wait".
func (g *Geometry) MayFit(held uint16, slices int, profile string) bool {
	s, ok := g.ShapeOf(profile)
	if !ok || slices+s.Slices > g.Slices {
		return false
	}
	for _, m := range s.masks {
		if m&held == 0 {
			return true
		}
	}
	return false
}

// ShapeSet is a set of shapes as bits by Shape.Index.
type ShapeSet uint16

// ShapesOf is the set of the shapes of the named profiles the model offers;
// names it does not offer are left out.
func (g *Geometry) ShapesOf(profiles ...string) ShapeSet {
	var set ShapeSet
	for _, p := range profiles {
		if s, ok := g.ShapeOf(p); ok {
			set |= 1 << s.Index
		}
	}
	return set
}

// usableKey is one question Usable answers.
type usableKey struct {
	held uint16
	room int
	want ShapeSet
}

// usableMemo memoises Usable per geometry: the answer depends only on the
// key, so every caller shares it.
type usableMemo struct {
	mu sync.Mutex
	m  map[usableKey]int
}

// Usable is the most compute slices that instances of the wanted shapes,
// placed together in the memory slots held leaves free, can use, with
// slices compute slices already taken. A free slice no combination of
// wanted placements can use is stranded. Instance count limits are not
// checked: on the models the project knows, slots and slices bind first.
func (g *Geometry) Usable(held uint16, slices int, want ShapeSet) int {
	return g.usable(usableKey{held, g.Slices - slices, want})
}

func (g *Geometry) usable(k usableKey) int {
	g.memo.mu.Lock()
	v, ok := g.memo.m[k]
	g.memo.mu.Unlock()
	if ok {
		return v
	}
	best := 0
	for want := k.want; want != 0 && best < k.room; want &= want - 1 {
		s := g.Shapes[bits.TrailingZeros16(uint16(want))]
		if s.Slices > k.room {
			continue
		}
		for _, m := range s.masks {
			if m&k.held == 0 {
				best = max(best, s.Slices+g.usable(usableKey{k.held | m, k.room - s.Slices, k.want}))
			}
		}
	}
	g.memo.mu.Lock()
	if g.memo.m == nil {
		g.memo.m = map[usableKey]int{}
	}
	g.memo.m[k] = best
	g.memo.mu.Unlock()
	return best
}

// Stranded is how many of a GPU's free compute slices no combination of
// placements of the wanted shapes in its free memory slots can use.
func (g *Geometry) Stranded(held uint16, slices int, want ShapeSet) int {
	return g.Slices - slices - g.Usable(held, slices, want)
}

// FreeRoom is how many more instances of profile fit in state s without
// touching any instance there, up to limit. Instances of one profile never
// overlap one another's placements, so placing them lowest slot first finds
// them all.
func (g *Geometry) FreeRoom(s State, profile string, limit int) int {
	n := 0
	for n < limit {
		c := g.Candidates(s, profile)
		if len(c) == 0 {
			break
		}
		s = g.Add(s, c[0].Index)
		n++
	}
	return n
}
