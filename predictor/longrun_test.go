package predictor

import (
	"math"
	"testing"
)

// slowSteps is a cache that keeps something for every new input it sees,
// on a 10 GB instance: the weights (3.1 GB) by 6 s, then, from 20 s, a step
// of 0.25 GB every 35 to 80 s (in a fixed, irregular order) until top bytes
// (0: on and on).
func slowSteps(top float64) func(t float64) float64 {
	gaps := []float64{50, 35, 70, 45, 60, 40, 80, 55}
	return func(t float64) float64 {
		u := ramp(t, 1, 6, 0.4e9, 3.1e9)
		at := 20.0
		for i := 0; t >= at; i++ {
			u += 0.25e9
			at += gaps[i%len(gaps)]
		}
		if top > 0 {
			u = math.Min(u, top)
		}
		return u
	}
}

// Slow growth in steps tens of seconds apart, which has gone on for
// minutes, is marked before its OOM, at 10 Hz at least 5 s ahead: it is
// asked whether it runs out within the eviction time (stairsLongRun).
// Before that rule it was marked only on its OOM reading at 10 Hz. The
// same steps stopping at 90 % are never marked: at their rate the
// instance's end was always more than an eviction time away.
func TestLongRunSlowStepsMarked(t *testing.T) {
	for _, hz := range []float64{10, 1} {
		mark, oom, d := series(t, Config{}, hz, 3000, slowSteps(0))
		if oom < 0 || mark < 0 || (hz == 10 && oom-mark < 5) {
			t.Errorf("slow steps, %v Hz: mark at %v s (%s), OOM at %v s: want a mark, 5 s ahead at 10 Hz", hz, mark, d.Reason, oom)
		}
		if mark, _, d := series(t, Config{}, hz, 3000, slowSteps(9e9)); mark >= 0 {
			t.Errorf("slow steps stopping at 90 %%, %v Hz: marked at %v s (%s)", hz, mark, d.Reason)
		}
	}
}

// evenSteps is a cache or a leak on a 10 GB instance: the weights by 6 s,
// then, from 20 s, a step of step bytes every `every` seconds until top
// bytes, then flat.
func evenSteps(weights, step, every, top float64) func(t float64) float64 {
	return func(t float64) float64 {
		u := ramp(t, 1, 6, 0.4e9, weights)
		if t >= 20 {
			u += step * (1 + math.Floor((t-20)/every))
		}
		return math.Min(u, top)
	}
}

// steadySteps is a cache that fills on a 10 GB instance: the weights
// (1 GB) by 6 s, then, from 20 s, a step of 0.25 GB every 5 s until top
// bytes, then flat.
func steadySteps(top float64) func(t float64) float64 { return evenSteps(1e9, 0.25e9, 5, top) }

// A staircase that has risen for minutes and stops 2.5 GB under a 10 GB
// instance, ten of its steps short, is not marked: at its rate it would
// have run out within the eviction time, but its OOM was more than
// stairsLongSteps of its own steps away, so it was asked about NearTime,
// as a younger run is. Without stairsLongSteps it is marked at 10 Hz and
// at 1 Hz. The same steps going on to the OOM are marked at least 5 s
// ahead at 10 Hz.
func TestLongRunManyStepsShortNotMarked(t *testing.T) {
	for _, hz := range []float64{10, 1} {
		if mark, _, d := series(t, Config{}, hz, 600, steadySteps(7.5e9)); mark >= 0 {
			t.Errorf("steps stopping at 75 %%, %v Hz: marked at %v s (%s)", hz, mark, d.Reason)
		}
		mark, oom, d := series(t, Config{}, hz, 600, steadySteps(11e9))
		if oom < 0 || mark < 0 || mark >= oom || (hz == 10 && oom-mark < 5) {
			t.Errorf("steps on to the OOM, %v Hz: mark at %v s (%s), OOM at %v s: want a mark, 5 s ahead at 10 Hz", hz, mark, d.Reason, oom)
		}
	}
}

// sparseSteps is a leak of 0.5 GB every 90 s from 20 s, after 3.05 GB of
// weights, on a 10 GB instance, until top bytes. Its step at 1100 s leaves
// 0.45 GB, under its steps' mean: the next one, at 1190 s, runs out.
func sparseSteps(top float64) func(t float64) float64 { return evenSteps(3.05e9, 0.5e9, 90, top) }

// A long run whose headroom is under its mean step runs out at its next
// step, whenever it comes: it is marked then, though with its steps 90 s
// apart its OOM is projected beyond the eviction time (81 s at its rate).
// Without that rule it is marked only on its OOM reading. The same steps
// stopping one step earlier, 0.95 GB short, are not marked.
func TestLongRunNextStepMarked(t *testing.T) {
	for _, hz := range []float64{10, 1} {
		mark, oom, d := series(t, Config{}, hz, 1500, sparseSteps(11e9))
		if oom < 0 || mark < 0 || mark >= oom || (hz == 10 && oom-mark < 5) {
			t.Errorf("sparse steps, %v Hz: mark at %v s (%s), OOM at %v s: want a mark, 5 s ahead at 10 Hz", hz, mark, d.Reason, oom)
		}
		if mark, _, d := series(t, Config{}, hz, 1500, sparseSteps(9.05e9)); mark >= 0 {
			t.Errorf("sparse steps stopping 0.95 GB short, %v Hz: marked at %v s (%s)", hz, mark, d.Reason)
		}
	}
}

// copies is a server that loads one more copy of its model every 240 s
// from 20 s, after 2 GB of weights by 6 s, on a 10 GB instance, until it
// holds n copies: each copy is 0.85 GB, read at 1 GB/s, so the quantum cuts
// it into several rises, one burst. Its ninth copy, at 1940 s, leaves
// 0.35 GB; the tenth, at 2180 s, runs out.
func copies(n int) func(t float64) float64 {
	return func(t float64) float64 {
		u := ramp(t, 1, 6, 0.4e9, 2e9)
		for k := 0; k < n; k++ {
			at := 20 + 240*float64(k)
			u += ramp(t, at, at+0.85, 0, 0.85e9)
		}
		return u
	}
}

// A long run that rises in bursts, whose headroom is under its mean burst,
// runs out at its next burst: it is marked then (nextBurst), 240 s ahead,
// though its mean held step (a quantum of the burst) still fits and, at
// its rate, its OOM is projected beyond the eviction time. Without that
// rule it is marked at 10 Hz only 0.3 s before its OOM; at 1 Hz a poll
// reads most of a copy as one rise, and the mean held step says it. The
// same
// copies stopping one copy earlier, 1.2 GB short, are not marked.
func TestLongRunNextBurstMarked(t *testing.T) {
	for _, hz := range []float64{10, 1} {
		mark, oom, d := series(t, Config{}, hz, 3000, copies(10))
		if oom < 0 || mark < 0 || oom-mark < 120 {
			t.Errorf("copies, %v Hz: mark at %v s (%s), OOM at %v s: want a mark two minutes ahead", hz, mark, d.Reason, oom)
		}
		if mark, _, d := series(t, Config{}, hz, 3000, copies(8)); mark >= 0 {
			t.Errorf("copies stopping 1.2 GB short, %v Hz: marked at %v s (%s)", hz, mark, d.Reason)
		}
	}
}
