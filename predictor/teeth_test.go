package predictor

import "testing"

// search is a batch-size search on a 10 GB instance: the context and the
// weights (3 GB) by 6 s, then, from 10 s, trials whose activations start
// at first bytes and grow by factor each time, capped at top bytes (0: no
// cap). Each trial rises over 1 s, holds 8 s, and frees its activations
// for 1 s before the next.
func search(first, factor, top float64) func(t float64) float64 {
	return func(t float64) float64 {
		u := ramp(t, 1, 6, 0.4e9, 3e9)
		if t < 10 {
			return u
		}
		k := int((t - 10) / 10)
		in := t - 10 - float64(k)*10
		a := first
		for range k {
			a *= factor
			if top > 0 {
				a = min(a, top)
			}
		}
		switch {
		case in < 1:
			return u + a*in
		case in < 9:
			return u + a
		}
		return u
	}
}

// A batch-size search whose trials grow by a third each time is marked
// before the trial that does not fit, at 10 Hz at least 5 s ahead, with a
// horizon or without: each tooth gives back its rise, so only the teeth's
// heights over their level base show the growth (teeth).
func TestTeethSearchMarked(t *testing.T) {
	for _, hz := range []float64{10, 1} {
		for _, h := range []float64{0, 1800} {
			mark, oom, d := series(t, Config{Horizon: h}, hz, 600, search(0.3e9, 1.3, 0))
			if oom < 0 || mark < 0 || (hz == 10 && oom-mark < 5) {
				t.Errorf("search, horizon %v, %v Hz: mark at %v s (%s), OOM at %v s: want a mark, 5 s ahead at 10 Hz", h, hz, mark, d.Reason, oom)
			}
		}
	}
}

// Teeth that do not grow by a steady factor are not marked: a training
// loop's teeth of one height up to 90 %, two sizes in turn (an evaluation
// alternating two batch sizes), and a search that settles at 2 GB of
// activations, far from the instance's end.
func TestTeethQuietNotMarked(t *testing.T) {
	alternating := func(t float64) float64 {
		u := search(4e9, 1, 0)(t)
		if t >= 10 && int((t-10)/10)%2 == 1 && u > 3.05e9 {
			u -= 2e9
		}
		return u
	}
	for name, used := range map[string]func(float64) float64{
		"equal teeth":  search(6e9, 1, 0),
		"alternating":  alternating,
		"settles at 2": search(0.3e9, 1.3, 2e9),
	} {
		for _, hz := range []float64{10, 1} {
			if mark, _, d := series(t, Config{}, hz, 600, used); mark >= 0 {
				t.Errorf("%s, %v Hz: marked at %v s (%s)", name, hz, mark, d.Reason)
			}
		}
	}
}
