package tracegen

import (
	"strings"
	"testing"
)

// TestSealed7ShapesBehaveAsDescribed checks the seventh sealed set's
// generators without the predictor, on every seed the scorer runs: the
// set's make-up (names, seeds, how many grow and declare a horizon); at
// both rates, time stamps that rise; a quiet run that stays under 90% of
// its instance and lasts its declared horizon; a growing run whose last
// reading, and only that one, is over its instance, before s7Limit and,
// with a horizon, before 95% of it; and 1 Hz readings that are the 10 Hz
// readings of the same ticks.
func TestSealed7ShapesBehaveAsDescribed(t *testing.T) {
	shapes := Sealed7Shapes()
	if len(shapes) < 12 || len(shapes) > 14 {
		t.Fatalf("%d shapes, want 12 to 14", len(shapes))
	}
	taken := takenNames(Sealed2Shapes(), Sealed3Shapes(), Sealed4Shapes(), Sealed5Shapes(), Sealed6Shapes())
	if end := Sealed6Seed0 + uint64(len(Sealed6Shapes()))*100_000; end > Sealed7Seed0 {
		t.Errorf("the sixth set's seeds run to %d, past Sealed7Seed0", end)
	}
	growing, quietHorizon, growingHorizon := 0, 0, 0
	for i, s := range shapes {
		if taken[s.Name] || !strings.HasPrefix(s.Name, "s7-") {
			t.Errorf("%s: name taken or not marked s7-", s.Name)
		}
		taken[s.Name] = true
		if s.Seed0 != Sealed7Seed0+uint64(i)*100_000 {
			t.Errorf("%s: seeds from %d", s.Name, s.Seed0)
		}
		switch {
		case s.Growing && s.WithHorizon:
			growing++
			growingHorizon++
		case s.Growing:
			growing++
		case s.WithHorizon:
			quietHorizon++
		}
		for seed := range uint64(sealedTestSeeds) {
			fast, slow := s.Generate(seed, ShimHz), s.Generate(seed, NVMLHz)
			checkSealedRun(t, s, seed, ShimHz, fast, s7Limit, 0)
			checkSealedRun(t, s, seed, NVMLHz, slow, s7Limit, 0)
			checkSealedRates(t, s, seed, fast.Trace, slow.Trace)
		}
	}
	if 2*growing < len(shapes)-1 || 2*growing > len(shapes)+1 {
		t.Errorf("%d growing shapes of %d, want about half", growing, len(shapes))
	}
	if h := quietHorizon + growingHorizon; quietHorizon == 0 || growingHorizon == 0 || 3*h < len(shapes)-2 || 3*h > len(shapes)+3 {
		t.Errorf("%d quiet and %d growing shapes with a horizon of %d, want both, about a third in all", quietHorizon, growingHorizon, len(shapes))
	}
}

// TestSealed7SeedsDiffer checks that seeds draw different runs, and that a
// seed draws the same run twice.
func TestSealed7SeedsDiffer(t *testing.T) { checkSeedsDiffer(t, Sealed7Shapes()) }
