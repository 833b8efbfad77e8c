package tracegen

import (
	"strings"
	"testing"

	"github.com/migpro/migpro/predictor/trace"
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
		namesOf(Sealed7Shapes(), func(s SealedShape) string { return s.Name }),
	} {
		for _, n := range names {
			taken[n] = true
		}
	}
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
			checkSealed8Run(t, s, seed, ShimHz, fast)
			checkSealed8Run(t, s, seed, NVMLHz, slow)
			checkSealed8Rates(t, s, seed, fast.Trace, slow.Trace)
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

func checkSealed8Run(t *testing.T, s SealedShape, seed uint64, hz float64, run SealedRun) {
	t.Helper()
	rows := run.Trace.Rows
	if len(rows) < 10 {
		t.Errorf("%s seed %d at %g Hz: %d rows", s.Name, seed, hz, len(rows))
		return
	}
	if (run.Horizon > 0) != s.WithHorizon {
		t.Errorf("%s seed %d: horizon %g", s.Name, seed, run.Horizon)
	}
	if rows[0].T < 0 {
		t.Errorf("%s seed %d at %g Hz: starts at %g s", s.Name, seed, hz, rows[0].T)
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
		if last.T < 1000 || (s.WithHorizon && last.T < run.Horizon-60) {
			t.Errorf("%s seed %d at %g Hz: ends at %.0f s (horizon %.0f s)", s.Name, seed, hz, last.T, run.Horizon)
		}
		return
	}
	if last.Used <= run.Capacity || last.T >= s8Limit {
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

// checkSealed8Rates checks that every 1 Hz reading is the 10 Hz reading of
// the same tick, that the 1 Hz series polls about once a second, and that
// both rates end at the same OOM.
func checkSealed8Rates(t *testing.T, s SealedShape, seed uint64, fast, slow trace.Trace) {
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
	if n, m := len(slow.Rows), len(fast.Rows); m < 7*n-10 || m > 13*n+10 {
		t.Errorf("%s seed %d: %d readings at 1 Hz, %d at 10 Hz", s.Name, seed, n, m)
	}
	if s.Growing && fast.Rows[len(fast.Rows)-1] != slow.Rows[len(slow.Rows)-1] {
		t.Errorf("%s seed %d: the rates end at different OOMs", s.Name, seed)
	}
}

// TestSealed8SeedsDiffer checks that seeds draw different runs, and that a
// seed draws the same run twice.
func TestSealed8SeedsDiffer(t *testing.T) {
	for _, s := range Sealed8Shapes() {
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
		if len(again.Trace.Rows) != len(a.Trace.Rows) || again.Capacity != a.Capacity || again.Trace.Rows[len(a.Trace.Rows)-1] != a.Trace.Rows[len(a.Trace.Rows)-1] {
			t.Errorf("%s: seed 0 drew two different runs", s.Name)
		}
	}
}
