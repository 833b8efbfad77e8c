package eval

import (
	"sort"
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/trace"
	"github.com/migpro/migpro/predictor/tracegen"
)

// realSeeds is the bar: 100 seeds per family and rate.
const realSeeds = 100

// openGaps are the families on which migpro does not meet issue 13's bar
// (docs/predictor-families.md, "Results on framework-shaped series"). TestOpenGaps fails as soon as one of them
// meets it, so that the list and the docs cannot outlive the gap; every other
// family is held to the bar with no tolerance.
var openGaps = map[string]bool{}

func allReal() []tracegen.RealFamily {
	return append(tracegen.RealFamilies(), tracegen.HeldOutFamilies()...)
}

// meetsBar is issue 13's bar for one row: no false mark, no growing run
// marked only at its OOM, and at the shim's rate a lead of at least 5 s.
func meetsBar(r RealRow) (bool, string) {
	switch {
	case r.FalseMarks > 0:
		return false, "false marks"
	case r.Missed > 0:
		return false, "growing runs not marked before the OOM"
	case r.Hz == tracegen.ShimHz && r.Growing && r.MinLead < 5:
		return false, "lead under 5 s"
	}
	return true, ""
}

// TestRealFamilies is the acceptance test on framework-shaped series, the
// tuned families and the held-out sweeps: 100 seeds of each at both rates,
// with the agent's settings and no horizon. -v prints, from one run, the
// tables docs/predictor-families.md carries for the baseline and migpro.
func TestRealFamilies(t *testing.T) {
	rows, err := ScoreReal(predictor.ForSeconds(predictor.Config{Capacity: tracegen.Capacity}), allReal(), realSeeds)
	if err != nil {
		t.Fatal(err)
	}
	base, err := ScoreReal(predictor.Config{Algorithm: predictor.Baseline, Capacity: tracegen.Capacity}, allReal(), realSeeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s\n%s", FormatReal(base), FormatReal(rows))
	for _, r := range rows {
		if openGaps[r.Family] {
			continue
		}
		if ok, why := meetsBar(r); !ok {
			t.Errorf("%s at %g Hz: %s (%d false, %d missed, min lead %.1f s)", r.Family, r.Hz, why, r.FalseMarks, r.Missed, r.MinLead)
		}
	}
	t.Run("OpenGaps", func(t *testing.T) {
		for name := range openGaps {
			met := true
			for _, r := range rows {
				if r.Family == name {
					ok, _ := meetsBar(r)
					met = met && ok
				}
			}
			if met {
				t.Errorf("%s now meets the bar at both rates: drop it from openGaps and from the docs", name)
			}
		}
	})
}

// TestFlanT5Step reports the training step at which migpro marks the
// 27-step flan-t5 run: the median over the seeds marked before the OOM, at
// both rates.
func TestFlanT5Step(t *testing.T) {
	var fam tracegen.RealFamily
	for _, f := range tracegen.HeldOutFamilies() {
		if f.Name == "flan-t5-27" {
			fam = f
		}
	}
	for _, hz := range []float64{tracegen.ShimHz, tracegen.NVMLHz} {
		var steps []int
		for seed := range uint64(realSeeds) {
			tr := fam.Generate(seed, hz)
			res, err := Score(tr, Options{Config: predictor.ForSeconds(predictor.Config{Capacity: tracegen.Capacity})})
			if err != nil {
				t.Fatal(err)
			}
			if res.Mark != nil && res.OOM != nil && *res.Mark < *res.OOM {
				steps = append(steps, stepAt(tr, *res.Mark))
			}
		}
		if len(steps) == 0 {
			t.Fatalf("%g Hz: never marked before the OOM", hz)
		}
		sort.Ints(steps)
		t.Logf("flan-t5-27 at %g Hz: marked before the OOM in %d/%d runs, at step %d (median; earliest %d, latest %d) of %d",
			hz, len(steps), realSeeds, steps[len(steps)/2], steps[0], steps[len(steps)-1], tracegen.FlanT5Steps)
		if last := steps[len(steps)-1]; last > tracegen.FlanT5Steps {
			t.Errorf("%g Hz: marked at step %d of %d", hz, last, tracegen.FlanT5Steps)
		}
	}
}

// stepAt is the training step running at t: one plus the number of times
// the activations were released before t (a drop of more than 512 MiB).
func stepAt(tr trace.Trace, t float64) int {
	step := 1
	for i := 1; i < len(tr.Rows) && tr.Rows[i].T <= t; i++ {
		if tr.Rows[i-1].Used > tr.Rows[i].Used+512<<20 {
			step++
		}
	}
	return step
}
