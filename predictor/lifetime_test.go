package predictor

import "testing"

// lateClimb is a Job on a 10 GB instance that loads 3 GB by 6 s, pauses,
// and then keeps 0.25 GB more every 1200 s (a slow life); from 4800 s it
// takes 0.25 GB every 10 s, twelve times, up to 7 GB (a batch of larger
// inputs sorted last), and holds there. Its life's rate never reaches the
// instance by a horizon at 7200 s; the climb's rate, 0.025 GB/s, would.
func lateClimb(t float64) float64 {
	u := ramp(t, 0, 6, 0.4e9, 3e9)
	switch {
	case t < 10:
		return u
	case t < 4800:
		return u + 0.25e9*float64(int((t-10)/1200))
	}
	return u + 0.25e9*3 + 0.25e9*min(12, 1+float64(int((t-4800)/10)))
}

// steadyClimb keeps 0.25 GB every 10 s from 10 s to its OOM: its life's
// rate is its climb's.
func steadyClimb(t float64) float64 {
	return ramp(t, 0, 6, 0.4e9, 3e9) + 0.25e9*max(0, float64(int((t-10)/10)))
}

// With a horizon, a run of rises is projected to it only when the
// container's own rate since its load reaches the instance by then too
// (lifetimeReaches): a late, faster climb over a slow life is not read as
// growth to the horizon, and steady growth still is. The runs of rises are
// read apart: through Observe the windows, projecting to the horizon, mark
// this late climb 10 s after the runs of rises would have; the eval sets'
// folded chains are where the rule spares runs (TestTuningTotals, behind
// the tag "tuning", holds those counts; docs/predictor-round8.md).
func TestStairsHorizonAsksTheLifetime(t *testing.T) {
	for _, hz := range []float64{10, 1} {
		if at := stairsHorizonMark(t, hz, 6000, lateClimb); at >= 0 {
			t.Errorf("%v Hz: a late climb over a slow life was projected to the horizon at %v s", hz, at)
		}
		if at := stairsHorizonMark(t, hz, 280, steadyClimb); at < 0 {
			t.Errorf("%v Hz: steady growth was never projected to the horizon", hz)
		}
	}
}

// stairsHorizonMark feeds used at hz to a predictor with a horizon at
// 7200 s and returns the first time its runs of rises alone project the
// peak past the instance by the horizon (-1: never).
func stairsHorizonMark(t *testing.T, hz, end float64, used func(t float64) float64) float64 {
	t.Helper()
	return firstHit(t, Config{Horizon: 7200}, hz, end, used, 0, func(p *Predictor, at float64) bool {
		v, hit := p.alg.(*migpro).stairs.check(p, at)
		return hit && v.reason == ReasonHorizon
	})
}
