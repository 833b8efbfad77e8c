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

// Rounds of 1.3 GB more every 300 s, with a horizon, are read as rounds
// once the next would not fit: from the fifth stage (1210 s), a round
// ahead of the OOM (1510 s), at both rates; and the predictor marks them
// before the OOM. (On so clean a series the windows, projecting to the
// horizon, mark first; the eval sets' rounds, with noise and helpers
// beside them, are where the climbs alone see it: docs/predictor-round8.md.)
func TestClimbsRoundsMarked(t *testing.T) {
	grow := rounds(300, 1.2e9, 2.5e9, 3.8e9, 5.1e9, 6.4e9, 7.7e9)
	for _, hz := range []float64{10, 1} {
		if at := climbsMark(t, Config{Horizon: 7200}, hz, 1800, grow, 0); at < 1210 || at > 1510-240 {
			t.Errorf("%v Hz: read as rounds at %v s, want from 1210 s, a round ahead of the OOM at 1510 s", hz, at)
		}
		mark, oom, d := first(t, Config{Horizon: 7200}, hz, 1800, grow)
		if oom < 0 || mark < 0 || mark >= oom {
			t.Errorf("%v Hz: mark at %v s (%s), OOM at %v s: want a mark before the OOM", hz, mark, d.Reason, oom)
		}
	}
}

// Rounds are read only with a horizon, and only while the next is due
// before it, they keep their size and period, and one more does not fit:
// the same rounds without a horizon, or with one that ends before the next
// round; rounds that shrink (a warm-up settling); rounds that stop with
// room for one more; and rounds that stop where one more would not fit,
// once they have not come for one and a half periods, are not marked.
func TestClimbsRoundsNotMarked(t *testing.T) {
	grow := rounds(300, 1.2e9, 2.5e9, 3.8e9, 5.1e9, 6.4e9)
	for _, c := range []struct {
		name    string
		horizon float64
		used    func(float64) float64
	}{
		{"no horizon", 0, grow},
		{"ends before the next round", 1400, grow},
		{"shrinking rounds", 7200, rounds(300, 1.2e9, 3.2e9, 4.6e9, 5.4e9, 5.8e9, 6.0e9)},
		{"stops with room", 7200, rounds(300, 1.2e9, 2.5e9, 3.8e9, 5.1e9)},
	} {
		for _, hz := range []float64{10, 1} {
			if at := climbsMark(t, Config{Horizon: c.horizon}, hz, 3000, c.used, 0); at >= 0 {
				t.Errorf("%s, %v Hz: the rounds were marked at %v s", c.name, hz, at)
			}
		}
	}
	// Stopped where one more would not fit: read as rounds while the next
	// is due, never after.
	for _, hz := range []float64{10, 1} {
		if at := climbsMark(t, Config{Horizon: 7200}, hz, 3000, grow, 1212+climbStale*300); at >= 0 {
			t.Errorf("rounds that stopped at 1210 s, %v Hz: read as rounds at %v s", hz, at)
		}
	}
}

// climbsMark feeds used to a predictor, as series does, and returns the
// first time from after on that its climbs alone would mark (-1: never).
func climbsMark(t *testing.T, cfg Config, hz, end float64, used func(t float64) float64, after float64) float64 {
	t.Helper()
	cfg.Capacity = 10e9
	p := agent(t, cfg)
	var c climbs
	for i := 0; float64(i)/hz <= end; i++ {
		at := float64(i) / hz
		p.Observe(Sample{T: at, Used: uint64(used(at))})
		c.observe(at, p.peak, stairsQuantum*float64(cfg.Capacity))
		if _, hit := c.check(p, at); hit && at >= after {
			return at
		}
	}
	return -1
}

// first is series' first mark: when, the OOM, and the mark.
func first(t *testing.T, cfg Config, hz, end float64, used func(t float64) float64) (mark, oom float64, d Mark) {
	t.Helper()
	const capacity = 10e9
	cfg.Capacity = capacity
	p := agent(t, cfg)
	mark, oom = -1, -1
	for i := 0; float64(i)/hz <= end; i++ {
		at := float64(i) / hz
		u := used(at)
		if got, ok := p.Observe(Sample{T: at, Used: uint64(u)}); ok && mark < 0 {
			mark, d = at, got
		}
		if u > capacity {
			return mark, at, d
		}
	}
	return mark, oom, d
}
