package predictor

import "testing"

// pairs is a model server on a 10 GB instance: a 0.4 GB context, 2 GB of
// weights loaded by 4 s, then from 30 s adapters or shards loaded two at a
// time, 0.25 GB each, 1 s apart, a pair every 6 s, until it holds top.
func pairs(top float64) func(t float64) float64 {
	return func(t float64) float64 {
		u := 0.4e9 + ramp(t, 0, 4, 0, 2e9)
		for at, n := 30.0, 0; at <= t; n++ {
			u += 0.25e9
			at += []float64{1, 5}[n%2]
		}
		return min(u, top)
	}
}

// TestHorizonSteepClimbNotMarked: a server that declares its end (3600 s)
// and loads 2 GB in pairs of steps over 20 s after a pause, then holds, is
// never marked, at 10 Hz or 1 Hz. Its OOM at its rate is projected just
// beyond the eviction time (60 s) ahead, so before stairsHorizonReach it
// was projected to the horizon and marked at 49 s at both rates; that is
// sooner than twice the 49 s watched, so it is now asked the question
// without a horizon, which it never meets.
// The same pairs going on to the OOM (at 120 s) are still marked at least
// 5 s ahead.
func TestHorizonSteepClimbNotMarked(t *testing.T) {
	for _, hz := range []float64{10, 1} {
		if mark, _, d := series(t, Config{Horizon: 3600}, hz, 3600, pairs(4.4e9)); mark >= 0 {
			t.Errorf("%g Hz: a climb that stops at 4.4 GB marked at %.1f s (%s)", hz, mark, d.Reason)
		}
		mark, oom, _ := series(t, Config{Horizon: 3600}, hz, 3600, pairs(20e9))
		if oom < 0 || mark < 0 || oom-mark < 5 {
			t.Errorf("%g Hz: the climb to the OOM at %.1f s marked at %.1f s, want ≥ 5 s ahead", hz, oom, mark)
		}
	}
}

// gather is a training Job on a 10 GB instance that holds 3 GB and, every
// 600 s from 600 s, gathers a full checkpoint: 2 GB at 0.05 GB/s over
// 40 s, held 30 s while it is written, then freed at once.
func gather(t float64) float64 {
	at := t - 600*float64(int(t/600))
	if t < 600 || at >= 70 {
		return 3e9
	}
	return min(3e9+0.05e9*at, 5e9)
}

// gatherOn is the same Job whose first gather does not stop: it climbs at
// 0.05 GB/s to the OOM.
func gatherOn(t float64) float64 {
	return 3e9 + 0.05e9*max(0, t-600)
}

// TestHorizonGatherNotMarked: a Job that declares its end (3600 s) and
// gathers a checkpoint every 600 s is never marked, at 10 Hz or 1 Hz. Its
// climb's OOM, on the windows' line, is projected some 120 s ahead:
// beyond the eviction time, so before windowHorizonReach a window that saw
// it projected it to the horizon and marked at 624 s, at both rates; that
// is sooner than three times the 600 s watched, and the window spans less
// than an eviction time, so it is now asked the question without a
// horizon, which it never meets. The same climb going on to the OOM is
// still marked at least 5 s ahead.
func TestHorizonGatherNotMarked(t *testing.T) {
	for _, hz := range []float64{10, 1} {
		if mark, _, d := series(t, Config{Horizon: 3600}, hz, 3600, gather); mark >= 0 {
			t.Errorf("%g Hz: checkpoints gathered to 5 GB marked at %.1f s (%s)", hz, mark, d.Reason)
		}
		mark, oom, _ := series(t, Config{Horizon: 3600}, hz, 3600, gatherOn)
		if oom < 0 || mark < 0 || oom-mark < 5 {
			t.Errorf("%g Hz: the climb to the OOM at %.1f s marked at %.1f s, want ≥ 5 s ahead", hz, oom, mark)
		}
	}
}
