package predictor

import (
	"math"
	"testing"
)

// agent is a predictor with the agent's settings (ForSeconds) over cfg.
func agent(tb testing.TB, cfg Config) *Predictor {
	tb.Helper()
	p, err := New(ForSeconds(cfg))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// series feeds used(t) at hz from t=0 to end (or the OOM) on a 10 GB
// instance with the agent's settings and cfg's horizon; it returns the time
// of the mark, or -1, and of the OOM, or -1.
func series(t *testing.T, cfg Config, hz, end float64, used func(t float64) float64) (mark, oom float64, d Mark) {
	t.Helper()
	const capacity = 10e9
	cfg.Capacity = capacity
	p := agent(t, cfg)
	mark, oom = -1, -1
	for i := 0; float64(i)/hz <= end; i++ {
		at := float64(i) / hz
		u := used(at)
		if got, ok := p.Observe(Sample{T: at, Used: uint64(u)}); ok {
			mark, d = at, got
		}
		if u > capacity {
			return mark, at, d
		}
	}
	return mark, oom, d
}

// ramp is from + (to-from) over [t0, t1], clamped.
func ramp(t, t0, t1, from, to float64) float64 {
	return from + (to-from)*math.Min(1, math.Max(0, (t-t0)/(t1-t0)))
}

// step is an allocation of by bytes at at s.
type step struct{ at, by float64 }

// stepsBy is what the steps at or before t add up to.
func stepsBy(t float64, steps ...step) float64 {
	u := 0.0
	for _, s := range steps {
		if t >= s.at {
			u += s.by
		}
	}
	return u
}

// notMarked fails t when used, fed by series for end s at 10 Hz and 1 Hz
// with each of horizons (0: none), is marked; name says what used is.
func notMarked(t *testing.T, name string, horizons []float64, end float64, used func(t float64) float64) {
	t.Helper()
	for _, hz := range []float64{10, 1} {
		for _, h := range horizons {
			if mark, _, d := series(t, Config{Horizon: h}, hz, end, used); mark >= 0 {
				t.Errorf("%s, horizon %v, %v Hz: marked at %v s (%s)", name, h, hz, mark, d.Reason)
			}
		}
	}
}

// warmup is a training Job's start, on a 10 GB instance: the context, the
// weights (0.5 GB) loaded by 4 s, a pause, then its first step, which
// reserves 3 GB of activations in a second, its gradients and the
// optimiser's two moments (0.5 GB each) a few tenths of a second apart, and
// a little more as the cache settles, all by 12 s. It is flat from then
// on but for the first evaluation at 300 s, one step of 0.3 GB.
func warmup(t float64) float64 {
	return 0.4e9 + ramp(t, 2, 4, 0, 0.5e9) + ramp(t, 9, 10, 0, 3e9) + stepsBy(t, step{10.4, 0.5e9}, step{10.8, 1e9}, step{11.6, 0.3e9}, step{300, 0.3e9})
}

// A training Job that declares its length and is flat after its warm-up is
// never marked, at 10 Hz or 1 Hz: its warm-up is a rise that stopped, and
// the evaluation's step minutes later is a single step, so neither is
// projected to the declared end (the horizon, 1800 s). Without a horizon
// it is not marked either.
func TestHorizonWarmupNotMarked(t *testing.T) {
	notMarked(t, "warm-up then flat", []float64{1800, 0}, 900, warmup)
}

// The same Job that then leaks (20 MB a second from 40 s) is marked, with
// its horizon, by a quarter of its way to the OOM, at both rates.
func TestHorizonLeakAfterWarmupMarked(t *testing.T) {
	leak := func(t float64) float64 { return warmup(t) + 20e6*math.Max(0, t-40) }
	for _, hz := range []float64{10, 1} {
		mark, oom, d := series(t, Config{Horizon: 1800}, hz, 1800, leak)
		if oom < 0 || mark < 0 || mark > oom/4 || d.Reason != ReasonHorizon {
			t.Errorf("leak after a warm-up, %v Hz: mark at %v s (%s), OOM at %v s: want the horizon's mark by %v s", hz, mark, d.Reason, oom, oom/4)
		}
	}
}

// staircaseTo is a serving process's start: 3.5 GB loaded in 6 s, then a
// step of 0.45 GB every 4 s from 10 s until top bytes (0: on and on).
func staircaseTo(top float64) func(t float64) float64 {
	return func(t float64) float64 {
		u := 0.4e9 + ramp(t, 0, 6, 0, 3.5e9)
		if t >= 10 {
			u += 0.45e9 * math.Floor((t-10)/4+1)
		}
		if top > 0 {
			u = math.Min(u, top)
		}
		return u
	}
}

// A warm-up staircase that stops at 75 % is not marked with a horizon
// either: while it rises it is as steep as growth, its OOM projected within
// the eviction time, and the horizon adds nothing to that question. The
// same staircase going on to the OOM is marked at least 5 s ahead.
func TestHorizonWarmupStaircase(t *testing.T) {
	for _, hz := range []float64{10, 1} {
		if mark, _, d := series(t, Config{Horizon: 600}, hz, 600, staircaseTo(7.5e9)); mark >= 0 {
			t.Errorf("warm-up staircase with a horizon, %v Hz: marked at %v s (%s)", hz, mark, d.Reason)
		}
	}
	mark, oom, _ := series(t, Config{Horizon: 600}, 10, 600, staircaseTo(0))
	if oom < 0 || mark < 0 || oom-mark < 5 {
		t.Errorf("staircase to the OOM with a horizon: mark at %v s, OOM at %v s: want 5 s ahead", mark, oom)
	}
}

// doubling is a growth-on-demand pool on a 10 GB instance: the context
// and libraries (1 GB) from 1 s to 3 s, then, from 6 s, a first region of
// 0.25 GB and four more, each twice the last, 1.5 s apart; the last (4 GB)
// holds as much as all the earlier ones together. It ends at 8.75 GB and
// never grows again.
func doubling(t float64) float64 {
	u, region := ramp(t, 1, 3, 0, 1e9), 0.25e9
	for at := 6.0; at <= 12 && t >= at; at += 1.5 {
		u += region
		region *= 2
	}
	return u
}

// A pool that doubles its last region once more is one step, not a trend:
// it is not marked, at 10 Hz or 1 Hz, with or without a horizon.
func TestDoublingPoolNotMarked(t *testing.T) {
	notMarked(t, "doubling pool", []float64{0, 900}, 600, doubling)
}
