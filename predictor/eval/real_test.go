package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/tracegen"
)

// realSeeds is the bar: 100 seeds per family and rate.
const realSeeds = 100

// shortfall is where migpro does not yet meet issue 13's bar, per family and
// rate: the most false marks (quiet families) or missed runs (growing ones)
// in realSeeds seeds. Every entry is a known, documented gap
// (docs/predictor.md, "Framework-shaped series"); the test fails when a
// family does worse than listed, so the gaps can only shrink.
var shortfall = map[string]map[float64]int{
	// Loads that fill 70-80% of the instance at a steady rate: no series
	// alone tells them from growth while they last.
	"chunked-load": {tracegen.ShimHz: 3, tracegen.NVMLHz: 2},
	// Reserved memory that grows only when an evaluation needs a new
	// segment, 40-80 s apart: no window sees a rise in each quarter.
	"training-slow-leak": {},
	// Growth under a per-step sawtooth read at 1 Hz: the tooth hides it.
	"sawtooth-growth": {tracegen.ShimHz: 31, tracegen.NVMLHz: 31},
}

// TestRealFamilies is the acceptance test on framework-shaped series: no
// false mark on loading, preallocation, profiling spikes or warm pools at
// either rate, and growth marked at least 5 s before the OOM at the shim's
// rate, except for the shortfalls listed above. -v prints the table
// docs/predictor.md carries.
func TestRealFamilies(t *testing.T) {
	rows, err := ScoreReal(predictor.ForSeconds(predictor.Config{Capacity: tracegen.Capacity}), tracegen.RealFamilies(), realSeeds)
	if err != nil {
		t.Fatal(err)
	}
	base, err := ScoreReal(predictor.Config{Algorithm: predictor.Baseline, Capacity: tracegen.Capacity}, tracegen.RealFamilies(), realSeeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s%s", FormatReal(base), FormatReal(rows))
	for _, r := range rows {
		allowed := shortfall[r.Family][r.Hz]
		if r.FalseMarks > allowed {
			t.Errorf("%s at %g Hz: %d false marks in %d seeds", r.Family, r.Hz, r.FalseMarks, r.Seeds)
		}
		if r.Missed > allowed {
			t.Errorf("%s at %g Hz: %d growing runs not marked before the OOM", r.Family, r.Hz, r.Missed)
		}
		if r.Hz == tracegen.ShimHz && r.Missed == 0 && r.MedianLead > 0 && r.MinLead < 5 {
			t.Errorf("%s at %g Hz: lead %.1f s, want at least 5 s", r.Family, r.Hz, r.MinLead)
		}
	}
}
