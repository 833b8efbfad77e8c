package predictor

import "testing"

// rounds is a training run on a 10 GB instance: its weights and optimiser
// (3 GB) by 6 s, then, from 10 s, steps of 3 s whose activations rise
// over 0.5 s, are held for 1.5 s and freed for 1 s. Every stage seconds a
// new stage starts whose activations are larger (sizes[k] bytes in stage k;
// the last size goes on to the end).
func rounds(stage float64, sizes ...float64) func(t float64) float64 {
	return func(t float64) float64 {
		u := ramp(t, 0, 6, 0.4e9, 3e9)
		if t < 10 {
			return u
		}
		k := min(int((t-10)/stage), len(sizes)-1)
		in := t - 10 - 3*float64(int((t-10)/3))
		switch {
		case in < 0.5:
			return u + sizes[k]*2*in
		case in < 2:
			return u + sizes[k]
		}
		return u
	}
}

// Rounds of 1.3 GB more every 300 s are read as rounds once the next
// would not fit: from the fifth stage (1210 s), a round ahead of the OOM
// (1510 s), at both rates, with a horizon or without; and the predictor
// marks them before the OOM. Rounds of 1.8 GB, whose fourth stage is the
// last that fits (910 s), are read there with a horizon (three climbs
// after the load); without one a fourth climb is asked, and the next is
// the OOM. (On so clean a series the windows, projecting to the horizon,
// mark first; the eval sets' rounds, with noise and helpers beside them,
// are where the climbs alone see it: docs/predictor-round8.md.)
func TestClimbsRoundsMarked(t *testing.T) {
	grow := rounds(300, 1.2e9, 2.5e9, 3.8e9, 5.1e9, 6.4e9, 7.7e9)
	steep := rounds(300, 1.0e9, 2.8e9, 4.6e9, 6.4e9, 8.2e9)
	for _, hz := range []float64{10, 1} {
		for _, h := range []float64{0, 7200} {
			if at := climbsMark(t, Config{Horizon: h}, hz, 1800, grow, 0); at < 1210 || at > 1510-240 {
				t.Errorf("%v Hz, horizon %v: read as rounds at %v s, want from 1210 s, a round ahead of the OOM at 1510 s", hz, h, at)
			}
			mark, oom, d := series(t, Config{Horizon: h}, hz, 1800, grow)
			if oom < 0 || mark < 0 || mark >= oom {
				t.Errorf("%v Hz, horizon %v: mark at %v s (%s), OOM at %v s: want a mark before the OOM", hz, h, mark, d.Reason, oom)
			}
		}
		if at := climbsMark(t, Config{Horizon: 7200}, hz, 1800, steep, 0); at < 910 || at > 1210-240 {
			t.Errorf("%v Hz: rounds of 1.8 GB with a horizon read at %v s, want from 910 s, a round ahead of the OOM at 1210 s", hz, at)
		}
		if at := climbsMark(t, Config{}, hz, 1800, steep, 0); at >= 0 {
			t.Errorf("%v Hz: rounds of 1.8 GB without a horizon read at %v s, after three climbs", hz, at)
		}
	}
}

// Rounds are read only while the next is due (before the horizon, when
// there is one), they keep their size and period, and one more does not
// fit: rounds that end before the next is due by the horizon; rounds that
// shrink (a warm-up settling); rounds that stop with room for one more;
// and rounds that stop where one more would not fit, once they have not
// come for one and a half periods, are not read.
func TestClimbsRoundsNotMarked(t *testing.T) {
	steep := rounds(300, 1.0e9, 2.8e9, 4.6e9, 6.4e9)
	for _, c := range []struct {
		name         string
		horizon, end float64
		used         func(float64) float64
	}{
		{"next round after the horizon", 1100, 1100, steep},
		{"shrinking rounds", 7200, 3000, rounds(300, 1.2e9, 3.2e9, 4.6e9, 5.4e9, 5.8e9, 6.0e9)},
		{"stops with room", 7200, 3000, rounds(300, 1.2e9, 2.5e9, 3.8e9, 5.1e9)},
		{"stops with room, no horizon", 0, 3000, rounds(300, 1.2e9, 2.5e9, 3.8e9, 5.1e9)},
	} {
		for _, hz := range []float64{10, 1} {
			if at := climbsMark(t, Config{Horizon: c.horizon}, hz, c.end, c.used, 0); at >= 0 {
				t.Errorf("%s, %v Hz: the rounds were read at %v s", c.name, hz, at)
			}
		}
	}
	// Stopped where one more would not fit: read as rounds while the next
	// is due, never after.
	for _, hz := range []float64{10, 1} {
		for _, h := range []float64{0, 7200} {
			stopped := 1212 + climbStale*300
			if h == 7200 {
				steep, stopped = rounds(300, 1.0e9, 2.8e9, 4.6e9, 6.4e9), 912+climbStale*300
			} else {
				steep = rounds(300, 1.2e9, 2.5e9, 3.8e9, 5.1e9, 6.4e9)
			}
			if at := climbsMark(t, Config{Horizon: h}, hz, 4000, steep, stopped); at >= 0 {
				t.Errorf("rounds that stopped, horizon %v, %v Hz: read as rounds at %v s", h, hz, at)
			}
		}
	}
}

// climbsMark feeds used to a predictor, as series does, and returns the
// first time from after on that its climbs alone would mark, before the
// OOM (-1: never). The climbs are read apart from the predictor's own, so
// a mark by another reading does not stop them.
func climbsMark(t *testing.T, cfg Config, hz, end float64, used func(t float64) float64, after float64) float64 {
	t.Helper()
	var c climbs
	return firstHit(t, cfg, hz, end, used, after, func(p *Predictor, at float64) bool {
		c.observe(at, p.peak, stairsQuantum*float64(p.cfg.Capacity))
		_, hit := c.check(p, at)
		return hit
	})
}

// firstHit feeds used at hz from t=0 to end to a predictor on a 10 GB
// instance with the agent's settings and cfg's horizon, asks hit after
// every sample, and returns the first time from after on that it holds,
// before the OOM (-1: never).
func firstHit(t *testing.T, cfg Config, hz, end float64, used func(t float64) float64, after float64, hit func(p *Predictor, at float64) bool) float64 {
	t.Helper()
	cfg.Capacity = 10e9
	p := agent(t, cfg)
	for i := 0; float64(i)/hz <= end; i++ {
		at := float64(i) / hz
		u := used(at)
		if u > float64(cfg.Capacity) {
			return -1 // the OOM: too late
		}
		p.Observe(Sample{T: at, Used: uint64(u)})
		if hit(p, at) && at >= after {
			return at
		}
	}
	return -1
}
