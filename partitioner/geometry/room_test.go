package geometry

import "testing"

func TestUsableAndStrandedOnA100(t *testing.T) {
	g := mustGeometry(t, a100_40gb(), nil)
	one, three := g.ShapesOf("1g.5gb"), g.ShapesOf("3g.20gb")
	if got := g.Usable(0, 0, one); got != 7 {
		t.Errorf("empty GPU, 1g wanted: usable %d, want 7", got)
	}
	if got := g.Stranded(0, 0, three); got != 1 {
		t.Errorf("empty GPU, only 3g wanted: stranded %d, want 1 (two 3g use six slices)", got)
	}
	// Two 3g.20gb hold every memory slot and six slices: the seventh is lost
	// to any profile.
	if got := g.Stranded(0xFF, 6, one|three); got != 1 {
		t.Errorf("two 3g held: stranded %d, want 1", got)
	}
	// A 4g at slots 0-3: the free half serves three 1g or one 3g.
	if got := g.Usable(0x0F, 4, one|three); got != 3 {
		t.Errorf("4g held: usable %d, want 3", got)
	}
	if got := g.Usable(0x0F, 4, 0); got != 0 {
		t.Errorf("nothing wanted: usable %d, want 0", got)
	}
}

func TestMayFitAndSlotMasks(t *testing.T) {
	g := mustGeometry(t, a100_40gb(), nil)
	if m := g.SlotMasks("3g.20gb"); len(m) != 2 || m[0] != 0x0F || m[1] != 0xF0 {
		t.Errorf("3g.20gb masks %#x, want [0xf 0xf0]", m)
	}
	if g.SlotMasks("9g.99gb") != nil {
		t.Error("an unknown profile has masks")
	}
	if g.MayFit(0x0F, 4, "4g.20gb") {
		t.Error("a 4g fits beside a 4g")
	}
	if !g.MayFit(0x0F, 4, "3g.20gb") {
		t.Error("a 3g does not fit beside a 4g")
	}
	if g.MayFit(0x01, 7, "1g.5gb") {
		t.Error("a 1g fits with every slice taken")
	}
}

func TestFreeRoomCountsInstancesBesideTheHeldOnes(t *testing.T) {
	g := mustGeometry(t, a100_40gb(), nil)
	if got := g.FreeRoom(g.Empty(), "1g.5gb", 10); got != 7 {
		t.Errorf("empty GPU: room for %d 1g.5gb, want 7", got)
	}
	if got := g.FreeRoom(g.Empty(), "1g.5gb", 2); got != 2 {
		t.Errorf("limit 2: %d", got)
	}
	s, err := g.Place(g.Empty(), "4g.20gb", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.FreeRoom(s, "1g.5gb", 10); got != 3 {
		t.Errorf("beside a 4g: room for %d 1g.5gb, want 3", got)
	}
	if got := g.FreeRoom(s, "7g.40gb", 10); got != 0 {
		t.Errorf("beside a 4g: room for %d 7g.40gb, want 0", got)
	}
}

// A layout uses room only through instances of wanted shapes. With 1g.5gb
// at slots 4 and 5 on an A100, 3g.20gb and 1g.5gb asked for (the weights
// migpro gives three 3g.20gb and one 1g.5gb waiting, the rest at the
// prior), a third 1g.5gb at slot 0 keeps slot 6 free for a 1g.10gb (the one small instance that
// reaches memory slot 7), and while 1g.10gb is wanted those layouts are
// full, so slot 0 keeps more capacity than slot 6. With 1g.10gb not wanted
// they are not, and slot 6, which keeps the lower half whole, keeps more.
func TestCapacityCountsOnlyWantedShapesAsUse(t *testing.T) {
	g := mustGeometry(t, a100_40gb(), nil)
	at := func(starts ...int) State {
		s := g.Empty()
		for _, st := range starts {
			o, ok := g.OptionAt("1g.5gb", st)
			if !ok {
				t.Fatalf("no 1g.5gb at %d", st)
			}
			s = g.Add(s, o.Index)
		}
		return s
	}
	want := map[string]float64{"1g.5gb": 0.8, "1g.10gb": 0.15, "2g.10gb": 0.3, "3g.20gb": 4.95, "4g.20gb": 0.6, "7g.40gb": 1.05}
	weight := make([]float64, len(g.Shapes))
	for _, sh := range g.Shapes {
		weight[sh.Index] = want[sh.Name()]
	}
	low, high := at(0, 4, 5), at(4, 5, 6)
	all := g.ShapesOf(g.ProfileNames()...)
	every, asked := g.Wanting(all), g.Wanting(g.ShapesOf(plainSet...))
	if a, b := every.Capacity(low, weight), every.Capacity(high, weight); a <= b {
		t.Errorf("every shape wanted: capacity with a 1g at slot 0 %.4f, at slot 6 %.4f; want slot 0 ahead", a, b)
	}
	if a, b := asked.Capacity(low, weight), asked.Capacity(high, weight); a >= b {
		t.Errorf("1g.10gb not wanted: capacity with a 1g at slot 0 %.4f, at slot 6 %.4f; want slot 6 ahead", a, b)
	}
}
