package tracegen

import (
	"strings"
	"testing"
)

// TestSealed9ShapesBehaveAsDescribed checks the ninth sealed set's
// generators without the predictor, on every seed the scorer runs: the
// set's make-up (names, seeds, how many grow and declare a horizon); at
// both rates, time stamps that rise; a quiet run that stays under 90% of
// its instance and lasts its declared horizon; a growing run whose last
// reading, and only that one, is over its instance, before s9Limit and,
// with a horizon, before 95% of it; 1 Hz readings that are the 10 Hz
// readings of the same ticks; and instances drawn as Sealed9Sizes says.
func TestSealed9ShapesBehaveAsDescribed(t *testing.T) {
	shapes := Sealed9Shapes()
	if len(shapes) != 12 {
		t.Fatalf("%d shapes, want 12", len(shapes))
	}
	sets := [][]SealedShape{Sealed2Shapes(), Sealed3Shapes(), Sealed4Shapes(), Sealed5Shapes(), Sealed6Shapes(), Sealed7Shapes(), Sealed8Shapes()}
	taken := takenNames(sets...)
	end := Sealed9Seed0 + uint64(len(shapes))*100_000
	starts := map[string]uint64{}
	for _, set := range sets {
		for _, s := range set {
			starts[s.Name] = s.Seed0
		}
	}
	for _, s := range append(TunedShapes(), append(HeldOutShapes(), SealedShapes()...)...) {
		starts[s.Name] = s.Seed0
	}
	for name, from := range starts {
		if from+sealedTestSeeds > Sealed9Seed0 && from < end {
			t.Errorf("%s runs seeds from %d, inside the ninth set's %d to %d", name, from, Sealed9Seed0, end)
		}
	}
	quiet, growing, quietHorizon, growingHorizon := 0, 0, 0, 0
	bySize := map[uint64]int{}
	for i, s := range shapes {
		if taken[s.Name] || !strings.HasPrefix(s.Name, "s9-") || s.WithHorizon != strings.HasSuffix(s.Name, "-horizon") {
			t.Errorf("%s: name taken, not marked s9-, or -horizon not matching its horizon", s.Name)
		}
		taken[s.Name] = true
		if s.Seed0 != Sealed9Seed0+uint64(i)*100_000 {
			t.Errorf("%s: seeds from %d", s.Name, s.Seed0)
		}
		switch {
		case s.Growing && s.WithHorizon:
			growingHorizon++
		case s.Growing:
			growing++
		case s.WithHorizon:
			quietHorizon++
		default:
			quiet++
		}
		for seed := range uint64(sealedTestSeeds) {
			fast, slow := s.Generate(seed, ShimHz), s.Generate(seed, NVMLHz)
			checkSealedRun(t, s, seed, ShimHz, fast, s9Limit, 1000)
			checkSealedRun(t, s, seed, NVMLHz, slow, s9Limit, 1000)
			checkSealedRates(t, s, seed, fast.Trace, slow.Trace)
			if fast.Capacity != slow.Capacity || fast.Horizon != slow.Horizon {
				t.Errorf("%s seed %d: %d bytes and horizon %g at 10 Hz, %d and %g at 1 Hz", s.Name, seed, fast.Capacity, fast.Horizon, slow.Capacity, slow.Horizon)
			}
			bySize[fast.Capacity/1e9]++
		}
	}
	if quiet != 4 || quietHorizon != 2 || growing != 4 || growingHorizon != 2 {
		t.Errorf("%d quiet, %d quiet with a horizon, %d growing, %d growing with a horizon; want 4, 2, 4, 2", quiet, quietHorizon, growing, growingHorizon)
	}
	runs := len(shapes) * sealedTestSeeds
	for _, gb := range []uint64{5, 10, 12, 20, 24, 40, 80} {
		if bySize[gb] == 0 {
			t.Errorf("no run on %d GB", gb)
		}
	}
	if 100*bySize[10] < 25*runs || 100*bySize[10] > 38*runs || len(bySize) != 7 {
		t.Errorf("instances %v of %d runs, want about 5 in 16 at 10 GB and only the 7 sizes of Sealed9Sizes", bySize, runs)
	}
}

// TestSealed9SeedsDiffer checks that seeds draw different runs, and that a
// seed draws the same run twice.
func TestSealed9SeedsDiffer(t *testing.T) { checkSeedsDiffer(t, Sealed9Shapes()) }
