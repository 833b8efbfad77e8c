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
	taken := map[string]bool{}
	for _, s := range append(TunedShapes(), append(HeldOutShapes(), SealedShapes()...)...) {
		taken[s.Name] = true
	}
	for _, names := range [][]string{
		namesOf(Sealed2Shapes(), func(s SealedShape) string { return s.Name }),
		namesOf(Sealed3Shapes(), func(s SealedShape) string { return s.Name }),
		namesOf(Sealed4Shapes(), func(s SealedShape) string { return s.Name }),
		namesOf(Sealed5Shapes(), func(s SealedShape) string { return s.Name }),
		namesOf(Sealed6Shapes(), func(s SealedShape) string { return s.Name }),
	} {
		for _, n := range names {
			taken[n] = true
		}
	}
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

func namesOf[S any](shapes []S, name func(S) string) []string {
	var out []string
	for _, s := range shapes {
		out = append(out, name(s))
	}
	return out
}

// TestSealed7SeedsDiffer checks that seeds draw different runs, and that a
// seed draws the same run twice.
func TestSealed7SeedsDiffer(t *testing.T) { checkSeedsDiffer(t, Sealed7Shapes()) }
