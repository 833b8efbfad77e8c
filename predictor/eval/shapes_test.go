package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/tracegen"
)

// shapeSeeds is how many seeds of each shape and rate the tests run.
const shapeSeeds = 100

// shapeBar is issue 29's bar for one row: no false mark on a quiet shape
// (either rate); every growing run marked before its OOM, at least 5 s
// ahead at 10 Hz; with a horizon, marked by a quarter of its way.
func shapeBar(t *testing.T, rows []ShapeRow) {
	t.Helper()
	for _, r := range rows {
		switch {
		case r.FalseMarks > 0:
			t.Errorf("%s at %g Hz: %d/%d quiet runs marked", r.Shape, r.Hz, r.FalseMarks, r.Seeds)
		case r.Missed > 0:
			t.Errorf("%s at %g Hz: %d/%d growing runs not marked before the OOM", r.Shape, r.Hz, r.Missed, r.Seeds)
		case r.Hz == tracegen.ShimHz && r.Late > 0:
			t.Errorf("%s at %g Hz: %d/%d marked under 5 s before the OOM (min %.1f s)", r.Shape, r.Hz, r.Late, r.Seeds, r.MinLead)
		case r.OverQuarter > 0:
			t.Errorf("%s at %g Hz: %d/%d not marked by 25%% of the way to the OOM (latest %.0f%%)", r.Shape, r.Hz, r.OverQuarter, r.Seeds, 100*r.MaxWay)
		}
	}
}

// TestTunedShapes holds the predictor, with the agent's settings, to issue
// 29's bar on the shapes it was tuned on. -v prints the table of
// docs/predictor-results.md.
func TestTunedShapes(t *testing.T) {
	rows, err := ScoreShapes(predictor.Config{}, tracegen.TunedShapes(), shapeSeeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", FormatShapes(rows))
	shapeBar(t, rows)
}

// TestHeldOutShapes is the same bar on the held-out shapes, whose
// parameters and seeds were fixed before tuning.
func TestHeldOutShapes(t *testing.T) {
	rows, err := ScoreShapes(predictor.Config{}, tracegen.HeldOutShapes(), shapeSeeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", FormatShapes(rows))
	shapeBar(t, rows)
}
