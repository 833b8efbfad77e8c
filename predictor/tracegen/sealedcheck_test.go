package tracegen

import (
	"testing"

	"github.com/migpro/migpro/predictor/trace"
)

// The generator checks every sealed set holds its runs to (sealedN_test.go
// adds what is particular to its set).

// checkSealedRun checks one rendered run: at least 10 readings from time
// 0, rising time stamps, a horizon exactly when the shape declares one; a
// quiet run stays under 90% of its instance and lasts at least quietEnd
// seconds (and, with a horizon, to within a minute of it); a growing run
// is over its instance at its last reading only, before limit and, with a
// horizon, before 95% of it.
func checkSealedRun(t *testing.T, s SealedShape, seed uint64, hz float64, run SealedRun, limit, quietEnd float64) {
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
		if last.T < quietEnd || (s.WithHorizon && last.T < run.Horizon-60) {
			t.Errorf("%s seed %d at %g Hz: ends at %.0f s (horizon %.0f s)", s.Name, seed, hz, last.T, run.Horizon)
		}
		return
	}
	if last.Used <= run.Capacity || last.T >= limit {
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

// checkSealedRates checks that every 1 Hz reading is the 10 Hz reading of
// the same tick, that the 1 Hz series polls about once a second, and that
// both rates end at the same OOM.
func checkSealedRates(t *testing.T, s SealedShape, seed uint64, fast, slow trace.Trace) {
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

// checkSeedsDiffer checks that seeds draw different runs, and that a
// seed draws the same run twice.
func checkSeedsDiffer(t *testing.T, shapes []SealedShape) {
	t.Helper()
	for _, s := range shapes {
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

// takenNames is every name of issue 29's tuned and held-out shapes, the
// first sealed set and the sealed sets given: a new set's names are new.
func takenNames(sets ...[]SealedShape) map[string]bool {
	taken := map[string]bool{}
	for _, s := range append(TunedShapes(), append(HeldOutShapes(), SealedShapes()...)...) {
		taken[s.Name] = true
	}
	for _, set := range sets {
		for _, s := range set {
			taken[s.Name] = true
		}
	}
	return taken
}
