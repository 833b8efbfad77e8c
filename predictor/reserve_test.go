package predictor

import (
	"math"
	"testing"
)

// collective is a data-parallel training Job's start on a 10 GB instance:
// the context (0.4 GB) at 1 s, the weights (1.7 GB) loaded from 3 s to
// 6 s, then its first step, which reserves 1.4 GB of activations at once
// at 16 s. The communication library's buffers come at the first gradient
// exchange, two chunks of 0.23 GB at 30 s, and its buckets are rebuilt
// once, 0.37 GB at 130 s. It is flat from then on.
func collective(t float64) float64 {
	return ramp(t, 3, 6, 0, 1.7e9) + stepsBy(t, step{1, 0.4e9}, step{16, 1.4e9}, step{30, 0.23e9}, step{30.6, 0.23e9}, step{130, 0.37e9})
}

// A Job that declares its length, whose warm-up is a reservation, then two
// small steps a minute apart, is not marked at 10 Hz or 1 Hz, with its
// horizon (1800 s) or without. The reservation ended what came before it
// (afterReserve), and the rebuild, after a wait many times the pause
// between the earlier steps, is one step after they stopped
// (stepAfterPauses). Before these rules it was marked at 30.6 s with its
// horizon, and with the first alone at 130 s.
func TestHorizonReservationThenStepsNotMarked(t *testing.T) {
	notMarked(t, "reservation then two steps", []float64{1800, 0}, 900, collective)
}

// The same Job that then leaks (20 MB a second from 40 s) is marked, with
// its horizon, by a quarter of its way to the OOM, at both rates; and a
// KV cache that grows in steps of 0.25 GB every 10 s after the same
// reservation is marked by a quarter too: its steps are all alike, none is
// a reservation, and none comes after a wait.
func TestHorizonGrowthAfterReservationMarked(t *testing.T) {
	leak := func(t float64) float64 { return collective(t) + 20e6*math.Max(0, t-40) }
	steps := func(t float64) float64 {
		u := collective(math.Min(t, 31))
		if t >= 40 {
			u += 0.25e9 * math.Floor((t-40)/10+1)
		}
		return u
	}
	for name, used := range map[string]func(float64) float64{"leak": leak, "kv steps": steps} {
		for _, hz := range []float64{10, 1} {
			mark, oom, d := series(t, Config{Horizon: 1800}, hz, 1800, used)
			if oom < 0 || mark < 0 || mark > oom/4 {
				t.Errorf("%s after a reservation, %v Hz: mark at %v s (%s), OOM at %v s: want a mark by %v s", name, hz, mark, d.Reason, oom, oom/4)
			}
		}
	}
}
