package predictor

import (
	"math"
	"testing"
)

// markAt feeds a clean linear rise of rate bytes/s from 1 GB, once a
// second, and returns the time to OOM left at the mark (-1: no mark).
func markAt(t *testing.T, evict float64) float64 {
	t.Helper()
	const capacity, rate = 10e9, 50e6
	p := agent(t, Config{Capacity: capacity, EvictionTime: evict})
	for s := 0.0; s < 400; s++ {
		used := 1e9 + rate*s
		if _, ok := p.Observe(Sample{T: s, Used: uint64(used)}); ok {
			return (capacity - used) / rate
		}
	}
	return -1
}

// The question is whether the container runs out within the time an
// eviction needs: a longer eviction time marks earlier, and no mark leaves
// more than the eviction time (plus the persistence of a few bins) to the OOM.
func TestEvictionTimeBoundsTheLead(t *testing.T) {
	short, long := markAt(t, 10), markAt(t, 60)
	if short < 0 || long < 0 {
		t.Fatalf("not marked: %v %v", short, long)
	}
	if !(long > short) {
		t.Errorf("eviction time 60 s marked %.0f s before the OOM, 10 s %.0f s: want earlier with the longer", long, short)
	}
	if short > 10 || long > 60 {
		t.Errorf("marked %.0f and %.0f s before the OOM: more than the eviction time", short, long)
	}
	if c := ForSeconds(Config{}); c.EvictionTime != DefaultEvictionTime {
		t.Errorf("ForSeconds eviction time %v", c.EvictionTime)
	}
	if _, err := New(Config{Capacity: 1, EvictionTime: -1}); err == nil {
		t.Error("a negative eviction time was accepted")
	}
}

// Hints given after the start change the decision: a horizon marks a slow
// rise long before its time to OOM would.
func TestHintsSetHorizon(t *testing.T) {
	run := func(h Hints) float64 {
		tr := NewTracker()
		if err := tr.Start("c", ForSeconds(Config{Capacity: 10e9})); err != nil {
			t.Fatal(err)
		}
		if ok, err := tr.Hint("c", h); !ok || err != nil {
			t.Fatalf("hint: %v %v", ok, err)
		}
		for s := 0.0; s < 2000; s++ {
			if d, ok := tr.Observe("c", Sample{T: s, Used: uint64(1e9 + 5e6*s)}); ok {
				return d.At
			}
		}
		return -1
	}
	without, with := run(Hints{}), run(Hints{Horizon: 3000})
	if with < 0 || !(without < 0 || with < without/2) {
		t.Errorf("marked at %.0f s with a horizon, %.0f s without", with, without)
	}
	tr := NewTracker()
	if ok, _ := tr.Hint("gone", Hints{Horizon: 1}); ok {
		t.Error("hint for an untracked container applied")
	}
	if err := (&Predictor{}).SetHints(Hints{EvictionTime: math.NaN()}); err == nil {
		t.Error("NaN eviction time accepted")
	}
}
