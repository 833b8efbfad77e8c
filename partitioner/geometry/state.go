package geometry

import "fmt"

// maxShapes bounds the per-shape counters kept inline in a State, so states
// stay comparable values that cost nothing to copy.
const maxShapes = 16

// maxOptions is how many (shape, placement) options a State's mask can hold.
const maxOptions = 64

// State is a set of options placed on one GPU: the instances that exist, by
// shape and placement. It is a small value; adding and removing make copies.
type State struct {
	Mask   uint64 // bit i set: option i is placed
	Slots  uint16 // memory slots in use
	Slices int    // compute slices in use
	counts [maxShapes]uint8
}

// Empty is the state of a GPU with no instances.
func (g *Geometry) Empty() State { return State{} }

// CanAdd reports whether option o can be placed: its slots are free, the
// compute slices suffice and the shape's instance count is not exhausted.
// These are the rules the driver enforces.
func (g *Geometry) CanAdd(s State, o int) bool {
	opt := &g.Options[o]
	sh := g.Shapes[opt.Shape]
	return s.Mask&(1<<o) == 0 &&
		s.Slots&opt.slotMask == 0 &&
		s.Slices+sh.Slices <= g.Slices &&
		int(s.counts[opt.Shape]) < sh.MaxCount
}

// Add places option o. It is the caller's job to check CanAdd first.
func (g *Geometry) Add(s State, o int) State {
	opt := &g.Options[o]
	s.Mask |= 1 << o
	s.Slots |= opt.slotMask
	s.Slices += g.Shapes[opt.Shape].Slices
	s.counts[opt.Shape]++
	return s
}

// Remove takes option o away; removing an absent option changes nothing.
func (g *Geometry) Remove(s State, o int) State {
	if s.Mask&(1<<o) == 0 {
		return s
	}
	opt := &g.Options[o]
	s.Mask &^= 1 << o
	s.Slots &^= opt.slotMask
	s.Slices -= g.Shapes[opt.Shape].Slices
	s.counts[opt.Shape]--
	return s
}

// Place adds a profile at a placement start, checking the driver's rules.
func (g *Geometry) Place(s State, profile string, start int) (State, error) {
	opt, ok := g.OptionAt(profile, start)
	if !ok {
		return s, fmt.Errorf("place %s at slot %d: not a legal placement", profile, start)
	}
	if !g.CanAdd(s, opt.Index) {
		return s, fmt.Errorf("place %s at slot %d: overlaps or exceeds the GPU", profile, start)
	}
	return g.Add(s, opt.Index), nil
}

// Candidates lists the options of a profile that can be placed in state s,
// in ascending slot order.
func (g *Geometry) Candidates(s State, profile string) []Option {
	sh, ok := g.ShapeOf(profile)
	if !ok {
		return nil
	}
	var out []Option
	for _, pl := range sh.Placements {
		o := g.optionIndex[optionKey{sh.Index, pl.Start}]
		if g.CanAdd(s, o) {
			out = append(out, g.Options[o])
		}
	}
	return out
}
