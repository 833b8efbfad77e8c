package tracegen

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// sealedTestSeeds is how many seeds of each sealed shape the generator
// checks render (the scorer runs 100).
const sealedTestSeeds = 100

// TestSealedShapesBehaveAsDescribed checks the sealed generators against
// the descriptions they were written from: a quiet run never comes within
// 64 MB of the capacity (so Generate's clamp never shapes it) and ends
// flat, or for the training loop keeps its peaks level; a growing run
// exceeds the capacity within its Duration at both rates, its first sample
// over the capacity is its last, and the one with a horizon runs out well
// before its planned end.
func TestSealedShapesBehaveAsDescribed(t *testing.T) {
	shapes := SealedShapes()
	if len(shapes) != 8 {
		t.Fatalf("%d sealed shapes, want 8", len(shapes))
	}
	names := map[string]bool{}
	for _, s := range append(TunedShapes(), HeldOutShapes()...) {
		names[s.Name] = true
	}
	growing, horizons := 0, 0
	for _, s := range shapes {
		if names[s.Name] || !strings.HasPrefix(s.Name, "sealed-") {
			t.Errorf("%s: name taken or not marked sealed", s.Name)
		}
		names[s.Name] = true
		if s.Seed0 < SealedSeed0 || s.Seed0+sealedTestSeeds > 1_000_000 {
			t.Errorf("%s: seeds from %d overlap another set's", s.Name, s.Seed0)
		}
		if s.Growing {
			growing++
		}
		if s.WithHorizon {
			horizons++
		}
		for seed := range uint64(sealedTestSeeds) {
			if s.Growing {
				checkSealedGrowing(t, s, seed)
			} else {
				checkSealedQuiet(t, s, seed)
			}
		}
	}
	if growing != 4 || horizons != 1 {
		t.Errorf("%d growing shapes and %d with a horizon, want 4 and 1", growing, horizons)
	}
}

func checkSealedGrowing(t *testing.T, s Shape, seed uint64) {
	t.Helper()
	for _, hz := range []float64{ShimHz, NVMLHz} {
		tr := s.Generate(seed, hz)
		n := len(tr.Rows)
		if n < 10 {
			t.Fatalf("%s seed %d at %g Hz: %d rows", s.Name, seed, hz, n)
		}
		last := tr.Rows[n-1]
		if last.Used <= ShapeCapacity || last.T >= s.Duration {
			t.Errorf("%s seed %d at %g Hz: ends at %.1f s with %d bytes: no OOM within %g s", s.Name, seed, hz, last.T, last.Used, s.Duration)
		}
		for _, row := range tr.Rows[:n-1] {
			if row.Used > ShapeCapacity {
				t.Fatalf("%s seed %d at %g Hz: over the capacity at %.1f s before its last sample", s.Name, seed, hz, row.T)
			}
		}
		// The horizon is a planned end the run does not reach: it runs out
		// before 90 % of it, and not in its first quarter.
		if s.WithHorizon && (last.T > 0.9*s.Duration || last.T < 0.25*s.Duration) {
			t.Errorf("%s seed %d at %g Hz: OOM at %.0f s of a %g s horizon", s.Name, seed, hz, last.T, s.Duration)
		}
	}
}

func checkSealedQuiet(t *testing.T, s Shape, seed uint64) {
	t.Helper()
	// The raw run, before Generate's clamp, drawn as Generate draws it.
	used := s.gen(rand.New(rand.NewPCG(s.Seed0+seed, 0x73686170)), s.Duration)
	if got := float64(len(used)) / ShimHz; math.Abs(got-s.Duration) > 1 {
		t.Fatalf("%s seed %d: %g s long, want %g", s.Name, seed, got, s.Duration)
	}
	top := 0.0
	for _, u := range used {
		top = math.Max(top, u)
	}
	if top >= float64(ShapeCapacity)-64e6 {
		t.Errorf("%s seed %d: reaches %.3g bytes, within 64 MB of the capacity", s.Name, seed, top)
	}
	for _, hz := range []float64{ShimHz, NVMLHz} {
		for _, row := range s.Generate(seed, hz).Rows {
			if row.Used > ShapeCapacity {
				t.Fatalf("%s seed %d at %g Hz: over the capacity at %.1f s", s.Name, seed, hz, row.T)
			}
		}
	}
	tail := used[len(used)-int(60*ShimHz):]
	if s.Name == "sealed-training-loop" {
		// Level peaks: every minute after the first reaches the same top
		// within 2 % of the capacity, under 85 %.
		lo, hi := math.Inf(1), 0.0
		for i := int(60 * ShimHz); i+int(60*ShimHz) <= len(used); i += int(60 * ShimHz) {
			m := 0.0
			for _, u := range used[i : i+int(60*ShimHz)] {
				m = math.Max(m, u)
			}
			lo, hi = math.Min(lo, m), math.Max(hi, m)
		}
		if hi-lo > 0.02*float64(ShapeCapacity) || hi > 0.85*float64(ShapeCapacity) {
			t.Errorf("%s seed %d: minute peaks from %.3g to %.3g bytes", s.Name, seed, lo, hi)
		}
		return
	}
	lo, hi := math.Inf(1), 0.0
	for _, u := range tail {
		lo, hi = math.Min(lo, u), math.Max(hi, u)
	}
	if hi-lo > 10e6 {
		t.Errorf("%s seed %d: the last minute moves %.3g bytes, want flat", s.Name, seed, hi-lo)
	}
}

func TestSealedSeedsDiffer(t *testing.T) {
	for _, s := range SealedShapes() {
		a, b := s.Generate(0, NVMLHz), s.Generate(1, NVMLHz)
		same := 0
		for i := range min(len(a.Rows), len(b.Rows)) {
			if a.Rows[i].Used == b.Rows[i].Used {
				same++
			}
		}
		if same > len(a.Rows)/2 {
			t.Errorf("%s: seeds 0 and 1 share %d of %d rows", s.Name, same, len(a.Rows))
		}
	}
}
