package geometry

import (
	"github.com/migpro/migpro/gpu"
	"testing"
)

func mustGeometry(t testing.TB, profiles []gpu.Profile, counted []string) *Geometry {
	t.Helper()
	g, err := New(profiles, Config{Counted: counted})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestA100ReachabilityFacts(t *testing.T) {
	cases := []struct {
		name    string
		counted []string
		maximal int
		// reachable after one 1g.5gb at each slot 0..6 on an empty GPU
		after1g [7]int
	}{
		{"plain set", plainSet, 19, [7]int{6, 6, 6, 6, 6, 6, 12}},
		{"with 1g.10gb", append(append([]string(nil), plainSet...), "1g.10gb"), 78, [7]int{21, 21, 21, 21, 22, 22, 33}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := mustGeometry(t, a100_40gb(), c.counted)
			if got := g.MaximalLayouts(); got != c.maximal {
				t.Fatalf("maximal layouts = %d, want %d", got, c.maximal)
			}
			if got := g.Reachable(g.Empty()); got != c.maximal {
				t.Fatalf("reachable from empty = %d, want %d", got, c.maximal)
			}
			for slot := 0; slot < 7; slot++ {
				s, err := g.Place(g.Empty(), "1g.5gb", slot)
				if err != nil {
					t.Fatal(err)
				}
				if got := g.Reachable(s); got != c.after1g[slot] {
					t.Errorf("1g.5gb at slot %d leaves %d reachable, want %d", slot, got, c.after1g[slot])
				}
			}
		})
	}
}
