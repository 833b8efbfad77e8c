package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/tracegen"
)

// realSeeds is the bar: 100 seeds per family and rate.
const realSeeds = 100

// TestRealFamilies is the acceptance test on framework-shaped series: no
// false mark on loading, preallocation, profiling spikes or warm pools at
// either rate, and growth marked at least 5 s before the OOM at the shim's
// rate. -v prints the table docs/predictor.md carries.
func TestRealFamilies(t *testing.T) {
	rows, err := ScoreReal(predictor.Config{Capacity: tracegen.Capacity}, realSeeds)
	if err != nil {
		t.Fatal(err)
	}
	base, err := ScoreReal(predictor.Config{Algorithm: predictor.Baseline, Capacity: tracegen.Capacity}, realSeeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s%s", FormatReal(base), FormatReal(rows))
	for _, r := range rows {
		if r.FalseMarks > 0 {
			t.Errorf("%s at %g Hz: %d false marks in %d seeds", r.Family, r.Hz, r.FalseMarks, r.Seeds)
		}
		if r.Missed > 0 {
			t.Errorf("%s at %g Hz: %d growing runs not marked before the OOM", r.Family, r.Hz, r.Missed)
		}
		if r.Hz == tracegen.ShimHz && r.MedianLead+r.MinLead > 0 && r.MinLead < 5 {
			t.Errorf("%s at %g Hz: lead %.1f s, want at least 5 s", r.Family, r.Hz, r.MinLead)
		}
	}
}
