package geometry

import (
	"testing"

	"github.com/migpro/migpro/gpu"
)

func TestShapesMergeVariantsAndDeriveSizes(t *testing.T) {
	g := mustGeometry(t, a100_40gb(), nil)
	if g.Slots != 8 || g.Slices != 7 {
		t.Fatalf("slots/slices = %d/%d, want 8/7", g.Slots, g.Slices)
	}
	base, _ := g.ShapeOf("1g.5gb")
	me, ok := g.ShapeOf("1g.5gb+me")
	if !ok || me != base {
		t.Fatalf("1g.5gb+me should share 1g.5gb's shape")
	}
	dbl, _ := g.ShapeOf("1g.10gb")
	if dbl == base {
		t.Fatalf("1g.10gb has two-slot placements and must be its own shape")
	}
	if len(g.Shapes) != 6 {
		t.Fatalf("shapes = %d, want 6 (1g, 1g.10gb, 2g, 3g, 4g, 7g)", len(g.Shapes))
	}
	a30 := mustGeometry(t, a30_24gb(), nil)
	if a30.Slots != 4 || a30.Slices != 4 {
		t.Fatalf("A30 slots/slices = %d/%d, want 4/4", a30.Slots, a30.Slices)
	}
	// A30 maximal layouts: 4g | 2g2g | 2g 1g1g (x2 sides) | 1g x4 = 5.
	if got := a30.MaximalLayouts(); got != 5 {
		t.Fatalf("A30 maximal layouts = %d, want 5", got)
	}
}

func TestPlaceEnforcesDriverRules(t *testing.T) {
	g := mustGeometry(t, a100_40gb(), nil)
	s := g.Empty()
	var err error
	if s, err = g.Place(s, "3g.20gb", 4); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		profile string
		start   int
	}{
		{"3g.20gb", 2},  // not a legal start
		{"1g.5gb", 5},   // overlaps the 3g at 4..7
		{"4g.20gb", 0},  // 4+3 slices fit, but... 4g at 0:4 is free: must succeed (checked below)
		{"2g.10gb", 4},  // overlaps
		{"7g.40gb", 0},  // overlaps
		{"1g.10gb", 6},  // overlaps
		{"9g.90gb", 0},  // unknown profile
		{"1g.5gb", 7},   // 1g has no slot 7
		{"3g.20gb", -4}, // nonsense
	}
	for _, c := range cases {
		_, err := g.Place(s, c.profile, c.start)
		if c.profile == "4g.20gb" {
			if err != nil {
				t.Errorf("4g.20gb at 0 next to 3g at 4 must fit: %v", err)
			}
			continue
		}
		if err == nil {
			t.Errorf("placing %s at %d was accepted", c.profile, c.start)
		}
	}
	// Compute slices bind even when memory slots are free: 3g@4 + 2g@0 + 2g@2
	// is 7 slices; nothing more fits although no slot is left anyway. Use
	// 1g.10gb to check the count: at most 4 of them.
	s = g.Empty()
	for _, st := range []int{0, 2, 4, 6} {
		if s, err = g.Place(s, "1g.10gb", st); err != nil {
			t.Fatal(err)
		}
	}
	if s.Slices != 4 || s.Slots != 0xff {
		t.Fatalf("four 1g.10gb: slices %d slots %b", s.Slices, s.Slots)
	}
}

func TestSlicesLimitOnA30StyleGeometry(t *testing.T) {
	// A made-up model where memory slots outnumber compute slices: the slice
	// budget must stop the fifth 1g even though a slot is free.
	profiles := []gpu.Profile{
		{Name: "1g.1gb", Slices: 1, MaxCount: 8, Placements: seq(6, 1)},
		{Name: "4g.6gb", Slices: 4, MaxCount: 1, Placements: seq(0, 6, 0)},
	}
	g := mustGeometry(t, profiles, nil)
	s := g.Empty()
	for i := 0; i < 4; i++ {
		s, _ = g.Place(s, "1g.1gb", i)
	}
	if _, err := g.Place(s, "1g.1gb", 5); err == nil {
		t.Fatalf("fifth 1g placed beyond a 4-slice budget")
	}
}

func TestUncountedInstancesBlockTheirSlots(t *testing.T) {
	g := mustGeometry(t, a100_40gb(), plainSet)
	s, err := g.Place(g.Empty(), "1g.10gb", 6) // not counted; blocks slots 6-7
	if err != nil {
		t.Fatal(err)
	}
	// In the six slots and six slices left, the plain set's maximal
	// layouts are those of slots 0-5: count them by brute force over the
	// placements that avoid slots 6-7.
	got := g.Reachable(s)
	if got <= 0 || got >= 19 {
		t.Fatalf("reachable with slots 6-7 blocked = %d, want 0 < n < 19", got)
	}
	want := bruteForceMaximal(g, 0xc0, 1)
	if got != want {
		t.Fatalf("reachable = %d, brute force %d", got, want)
	}
	// A counted 1g at slot 5 next to it narrows the count further.
	s2, _ := g.Place(s, "1g.5gb", 5)
	if r := g.Reachable(s2); r <= 0 || r >= got {
		t.Fatalf("reachable after a 1g at 5 = %d, want 0 < n < %d", r, got)
	}
}

// bruteForceMaximal counts maximal sets of counted options by trying every
// subset of options, independently of the table's enumeration.
func bruteForceMaximal(g *Geometry, blockedSlots uint16, blockedSlices int) int {
	var opts []int
	for _, o := range g.Options {
		if g.Shapes[o.Shape].Counted && o.slotMask&blockedSlots == 0 {
			opts = append(opts, o.Index)
		}
	}
	valid := func(set int) (State, bool) {
		s := State{Slots: blockedSlots, Slices: blockedSlices}
		for i, o := range opts {
			if set&(1<<i) != 0 {
				if !g.CanAdd(s, o) {
					return s, false
				}
				s = g.Add(s, o)
			}
		}
		return s, true
	}
	n := 0
	for set := 0; set < 1<<len(opts); set++ {
		s, ok := valid(set)
		if !ok {
			continue
		}
		maximal := true
		for _, o := range opts {
			if g.CanAdd(s, o) {
				maximal = false
				break
			}
		}
		if maximal {
			n++
		}
	}
	return n
}

func TestTableAgreesWithBruteForce(t *testing.T) {
	g := mustGeometry(t, a100_40gb(), plainSet)
	if got, want := g.MaximalLayouts(), bruteForceMaximal(g, 0, 0); got != want {
		t.Fatalf("maximal = %d, brute force %d", got, want)
	}
}

func TestRemoveUndoesAdd(t *testing.T) {
	g := mustGeometry(t, a100_40gb(), nil)
	s, err := g.Place(g.Empty(), "2g.10gb", 2)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := g.Place(s, "1g.5gb", 6)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := g.OptionAt("1g.5gb", 6)
	if back := g.Remove(s2, o.Index); back != s {
		t.Fatalf("remove did not restore the state: %+v vs %+v", back, s)
	}
	if g.Reachable(s2) > g.Reachable(s) {
		t.Fatalf("adding an instance cannot increase reachability")
	}
}
