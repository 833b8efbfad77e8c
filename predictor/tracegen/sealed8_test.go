package tracegen

import (
	"strings"
	"testing"
)

// TestSealed8ShapesBehaveAsDescribed checks the eighth sealed set's
// generators without the predictor, on every seed the scorer runs: the
// set's make-up (names, seeds, how many grow and declare a horizon); at
// both rates, time stamps that rise; a quiet run that stays under 90% of
// its instance and lasts its declared horizon; a growing run whose last
// reading, and only that one, is over its instance, before s8Limit and,
// with a horizon, before 95% of it; 1 Hz readings that are the 10 Hz
// readings of the same ticks; and instances drawn as Sealed8Sizes says.
func TestSealed8ShapesBehaveAsDescribed(t *testing.T) {
	shapes := Sealed8Shapes()
	if len(shapes) != 12 {
		t.Fatalf("%d shapes, want 12", len(shapes))
	}
	taken := takenNames(Sealed2Shapes(), Sealed3Shapes(), Sealed4Shapes(), Sealed5Shapes(), Sealed6Shapes(), Sealed7Shapes())
	if end := Sealed7Seed0 + uint64(len(Sealed7Shapes()))*100_000; end > Sealed8Seed0 {
		t.Errorf("the seventh set's seeds run to %d, past Sealed8Seed0", end)
	}
	quiet, growing, quietHorizon, growingHorizon := 0, 0, 0, 0
	bySize := map[uint64]int{}
	for i, s := range shapes {
		if taken[s.Name] || !strings.HasPrefix(s.Name, "s8-") || s.WithHorizon != strings.HasSuffix(s.Name, "-horizon") {
			t.Errorf("%s: name taken, not marked s8-, or -horizon not matching its horizon", s.Name)
		}
		taken[s.Name] = true
		if s.Seed0 != Sealed8Seed0+uint64(i)*100_000 {
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
			checkSealedRun(t, s, seed, ShimHz, fast, s8Limit, 1000)
			checkSealedRun(t, s, seed, NVMLHz, slow, s8Limit, 1000)
			checkSealedRates(t, s, seed, fast.Trace, slow.Trace)
			if fast.Capacity != slow.Capacity {
				t.Errorf("%s seed %d: %d bytes at 10 Hz, %d at 1 Hz", s.Name, seed, fast.Capacity, slow.Capacity)
			}
			bySize[fast.Capacity/1e9]++
		}
	}
	if quiet != 4 || quietHorizon != 2 || growing != 4 || growingHorizon != 2 {
		t.Errorf("%d quiet, %d quiet with a horizon, %d growing, %d growing with a horizon; want 4, 2, 4, 2", quiet, quietHorizon, growing, growingHorizon)
	}
	runs := len(shapes) * sealedTestSeeds
	for _, gb := range []uint64{5, 10, 20, 40, 80} {
		if bySize[gb] == 0 {
			t.Errorf("no run on %d GB", gb)
		}
	}
	if 100*bySize[10] < 45*runs || len(bySize) != 5 {
		t.Errorf("instances %v of %d runs, want about half at 10 GB and only 5 to 80 GB", bySize, runs)
	}
}

// TestSealed8SeedsDiffer checks that seeds draw different runs, and that a
// seed draws the same run twice.
func TestSealed8SeedsDiffer(t *testing.T) { checkSeedsDiffer(t, Sealed8Shapes()) }
