package tracegen

import (
	"strings"
	"testing"

	"github.com/migpro/migpro/predictor/trace"
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
			checkSealed7Run(t, s, seed, ShimHz, fast)
			checkSealed7Run(t, s, seed, NVMLHz, slow)
			checkSealed7Rates(t, s, seed, fast.Trace, slow.Trace)
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

func checkSealed7Run(t *testing.T, s SealedShape, seed uint64, hz float64, run SealedRun) {
	t.Helper()
	rows := run.Trace.Rows
	if len(rows) < 10 {
		t.Errorf("%s seed %d at %g Hz: %d rows", s.Name, seed, hz, len(rows))
		return
	}
	if (run.Horizon > 0) != s.WithHorizon {
		t.Errorf("%s seed %d: horizon %g", s.Name, seed, run.Horizon)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].T <= rows[i-1].T {
			t.Errorf("%s seed %d at %g Hz: time stamps %g then %g", s.Name, seed, hz, rows[i-1].T, rows[i].T)
			return
		}
	}
	capacity := float64(run.Capacity)
	last := rows[len(rows)-1]
	if !s.Growing {
		for _, r := range rows {
			if float64(r.Used) >= 0.9*capacity {
				t.Errorf("%s seed %d at %g Hz: %d bytes at %.1f s, over 90%% of %g", s.Name, seed, hz, r.Used, r.T, capacity)
				return
			}
		}
		if s.WithHorizon && last.T < run.Horizon-60 {
			t.Errorf("%s seed %d at %g Hz: ends at %.0f s of a %.0f s horizon", s.Name, seed, hz, last.T, run.Horizon)
		}
		return
	}
	if last.Used <= run.Capacity || last.T >= s7Limit {
		t.Errorf("%s seed %d at %g Hz: ends at %.1f s with %d bytes: no OOM", s.Name, seed, hz, last.T, last.Used)
	}
	for _, r := range rows[:len(rows)-1] {
		if r.Used > run.Capacity {
			t.Errorf("%s seed %d at %g Hz: over the instance at %.1f s before its last reading", s.Name, seed, hz, r.T)
			return
		}
	}
	if s.WithHorizon && last.T > 0.95*run.Horizon {
		t.Errorf("%s seed %d at %g Hz: OOM at %.0f s of a %.0f s horizon", s.Name, seed, hz, last.T, run.Horizon)
	}
}

// checkSealed7Rates checks that every 1 Hz reading is the 10 Hz reading of
// the same tick, and that both rates end at the same OOM.
func checkSealed7Rates(t *testing.T, s SealedShape, seed uint64, fast, slow trace.Trace) {
	t.Helper()
	j := 0
	for _, r := range slow.Rows {
		for j < len(fast.Rows) && fast.Rows[j].T < r.T {
			j++
		}
		if j == len(fast.Rows) || fast.Rows[j] != r {
			t.Errorf("%s seed %d: the 1 Hz reading %d bytes at %.3f s is not in the 10 Hz series", s.Name, seed, r.Used, r.T)
			return
		}
	}
	if s.Growing && fast.Rows[len(fast.Rows)-1] != slow.Rows[len(slow.Rows)-1] {
		t.Errorf("%s seed %d: the rates end at different OOMs", s.Name, seed)
	}
}

// TestSealed7SeedsDiffer checks that seeds draw different runs, and that a
// seed draws the same run twice.
func TestSealed7SeedsDiffer(t *testing.T) {
	for _, s := range Sealed7Shapes() {
		a, b, again := s.Generate(0, NVMLHz), s.Generate(1, NVMLHz), s.Generate(0, NVMLHz)
		same := 0
		for i := range min(len(a.Trace.Rows), len(b.Trace.Rows)) {
			if a.Trace.Rows[i].Used == b.Trace.Rows[i].Used {
				same++
			}
		}
		if same > len(a.Trace.Rows)/2 {
			t.Errorf("%s: seeds 0 and 1 share %d of %d readings", s.Name, same, len(a.Trace.Rows))
		}
		if len(again.Trace.Rows) != len(a.Trace.Rows) || again.Capacity != a.Capacity {
			t.Errorf("%s: seed 0 drew two different runs", s.Name)
		}
	}
}
