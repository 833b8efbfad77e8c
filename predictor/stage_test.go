package predictor

import "testing"

// lateGather is a checkpoint gathered late in a training run, on a 10 GB
// instance: the weights' shard and the optimizer's (3 GB) by 5 s, then
// from at s the full weights gathered at 0.25 GB/s up to 6.5 GB, held 30 s
// while they are written, and freed at once.
func lateGather(at float64) func(t float64) float64 {
	return func(t float64) float64 {
		u := ramp(t, 0, 5, 0.4e9, 3e9)
		if t >= at && t < at+44 {
			u = ramp(t, at, at+14, u, 6.5e9)
		}
		return u
	}
}

// A steep climb with a horizon, late in a run whose peak held for minutes
// (a checkpoint gathered at 400 s, an hour from the end), is a stage of
// the run (stage): its window is asked whether it runs out within
// NearTime, and a climb that stops 3.5 GB short of the instance, 14 s from
// it at its own rate, is not marked. Before the rule its window, read as
// without a horizon (steepWindow), was asked the eviction time and marked
// it at both rates (at 412 s, 2 s before it stops).
func TestStageGatherNotMarked(t *testing.T) {
	const horizon = 3600
	for _, hz := range []float64{10, 1} {
		if mark, _, d := series(t, Config{Horizon: horizon}, hz, 600, lateGather(400)); mark >= 0 {
			t.Errorf("gather at 400 s, %v Hz: marked at %v s (%s), want no mark", hz, mark, d.Reason)
		}
	}
}
