package eval

import (
	"fmt"
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/internal/ablate"
	"github.com/migpro/migpro/predictor/tracegen"
)

// shapeSeeds is how many seeds of each shape and rate the tests run.
const shapeSeeds = 100

// shapeMiss says how a row misses issue 29's bar, "" when it meets it: no
// false mark on a quiet shape (either rate); every growing run marked before
// its OOM, at least 5 s ahead at 10 Hz; with a horizon, marked by a quarter
// of its way.
func shapeMiss(r ShapeRow) string {
	switch {
	case r.FalseMarks > 0:
		return fmt.Sprintf("%d/%d quiet runs marked", r.FalseMarks, r.Seeds)
	case r.Missed > 0:
		return fmt.Sprintf("%d/%d growing runs not marked before the OOM", r.Missed, r.Seeds)
	case r.Hz == tracegen.ShimHz && r.Late > 0:
		return fmt.Sprintf("%d/%d marked under 5 s before the OOM (min %.1f s)", r.Late, r.Seeds, r.MinLead)
	case r.OverQuarter > 0:
		return fmt.Sprintf("%d/%d not marked by 25%% of the way to the OOM (latest %.0f%%)", r.OverQuarter, r.Seeds, 100*r.MaxWay)
	}
	return ""
}

// shapeGaps are the rows (shape@rate) that miss the bar today, as
// docs/predictor-results.md reports them. Every other row is held to the bar
// with no tolerance, and a listed row that meets it fails the test too, so
// that the list cannot outlive the gap.
var shapeGaps = map[string]bool{
	"bursty-kv-horizon@1":          true,
	"creeping-sawtooth@1":          true,
	"creeping-sawtooth-horizon@10": true, "creeping-sawtooth-horizon@1": true,

	"serving-staircase-ho@10": true, "serving-staircase-ho@1": true,
	"vllm-start-ho@1":         true,
	"training-sawtooth-ho@10": true, "training-sawtooth-ho@1": true,
	"kv-steps-ho@10":    true,
	"fast-growth-ho@10": true, "fast-growth-ho@1": true,
	"bursty-kv-horizon-ho@10": true, "bursty-kv-horizon-ho@1": true,
	"creeping-sawtooth-ho@10": true, "creeping-sawtooth-ho@1": true,
	"creeping-sawtooth-horizon-ho@10": true, "creeping-sawtooth-horizon-ho@1": true,
}

// shapeBar holds every row to the bar except those in gaps (named by
// gapsName in the message), and fails a listed row that meets it.
func shapeBar(t *testing.T, rows []ShapeRow, gaps map[string]bool, gapsName string) {
	t.Helper()
	for _, r := range rows {
		key := fmt.Sprintf("%s@%g", r.Shape, r.Hz)
		miss := shapeMiss(r)
		switch {
		case miss != "" && !gaps[key]:
			t.Errorf("%s at %g Hz: %s", r.Shape, r.Hz, miss)
		case miss == "" && gaps[key]:
			t.Errorf("%s at %g Hz meets the bar: drop it from %s and from docs/predictor-results.md", r.Shape, r.Hz, gapsName)
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
	shapeBar(t, rows, shapeGaps, "shapeGaps")
}

// TestHeldOutShapes is the same bar on the held-out shapes, whose
// parameters and seeds were fixed before tuning.
func TestHeldOutShapes(t *testing.T) {
	rows, err := ScoreShapes(predictor.Config{}, tracegen.HeldOutShapes(), shapeSeeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", FormatShapes(rows))
	shapeBar(t, rows, shapeGaps, "shapeGaps")
}

// quietWithHorizon is the quiet shapes of sets, each given a horizon (its
// planned end) and named with "-with-horizon".
func quietWithHorizon(sets ...[]tracegen.Shape) []tracegen.Shape {
	var quiet []tracegen.Shape
	for _, set := range sets {
		for _, s := range set {
			if !s.Growing {
				s.WithHorizon, s.Name = true, s.Name+"-with-horizon"
				quiet = append(quiet, s)
			}
		}
	}
	return quiet
}

// TestQuietShapesWithHorizon gives the tuned quiet shapes a horizon (their
// planned end), which issue 29's shapes do not: with a known end a run of
// rises that is still going is projected to it, so a warm-up staircase is
// still marked in a few runs (docs/predictor-horizon.md). The training
// sawtooth, whose peak does not climb, must stay unmarked, and the vLLM
// start (behind the load gate) nearly so. -v prints the table.
func TestQuietShapesWithHorizon(t *testing.T) {
	rows, err := ScoreShapes(predictor.Config{}, quietWithHorizon(tracegen.TunedShapes()), shapeSeeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", FormatShapes(rows))
	for _, r := range rows {
		if r.Shape == "training-sawtooth-with-horizon" && r.FalseMarks > 0 {
			t.Errorf("%s at %g Hz: %d/%d marked", r.Shape, r.Hz, r.FalseMarks, r.Seeds)
		}
		// The load gate keeps the windows from projecting a vLLM load to
		// the horizon (48/100 without it).
		if r.Shape == "vllm-start-with-horizon" && r.FalseMarks > 2 {
			t.Errorf("%s at %g Hz: %d/%d marked", r.Shape, r.Hz, r.FalseMarks, r.Seeds)
		}
	}
}

// TestShapesWithoutStairs takes the runs of rises away (ablate.Stairs) on the
// tuned shapes: the KV cache in steps and fast growth must then be missed
// or marked late far more often, and the quiet shapes stay unmarked either
// way, or the reading no longer earns its place. -v prints both tables.
func TestShapesWithoutStairs(t *testing.T) {
	count := func(base predictor.Config, label string) (late, falseMarks int) {
		rows, err := ScoreShapes(base, tracegen.TunedShapes(), shapeSeeds)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", label, FormatShapes(rows))
		for _, r := range rows {
			falseMarks += r.FalseMarks
			if r.Hz == tracegen.ShimHz && (r.Shape == "kv-steps" || r.Shape == "fast-growth") {
				late += r.Late
			}
		}
		return late, falseMarks
	}
	late, falseMarks := count(predictor.Config{}, "with the runs of rises")
	offLate, offFalse := count(without(predictor.Config{}, ablate.Stairs), "without the runs of rises")
	if falseMarks != 0 || offFalse != 0 {
		t.Errorf("quiet shapes marked: %d with the runs of rises, %d without", falseMarks, offFalse)
	}
	if offLate == 0 || late*4 > offLate {
		t.Errorf("kv-steps and fast-growth at 10 Hz marked under 5 s ahead: %d with the runs of rises, %d without: want at least 4 times fewer", late, offLate)
	}
}

// TestShapesWithoutLoadGate takes the load gate away (ablate.LoadGate: a window
// that holds the container's load may mark it) on the first held-out shapes,
// where it was tuned: the quiet shapes must then be marked more often, and
// no growing run may be missed or marked late because of the gate. -v prints
// both tables.
func TestShapesWithoutLoadGate(t *testing.T) {
	count := func(base predictor.Config, label string) (falseMarks, late int) {
		rows, err := ScoreShapes(base, tracegen.HeldOutShapes(), shapeSeeds)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", label, FormatShapes(rows))
		for _, r := range rows {
			falseMarks += r.FalseMarks
			late += r.Missed + r.Late
		}
		return falseMarks, late
	}
	falseMarks, late := count(predictor.Config{}, "with the load gate")
	offFalse, offLate := count(without(predictor.Config{}, ablate.LoadGate), "without the load gate")
	if falseMarks*2 > offFalse {
		t.Errorf("quiet runs marked: %d with the load gate, %d without: want at least 2 times fewer", falseMarks, offFalse)
	}
	if late > offLate {
		t.Errorf("growing runs missed or marked under 5 s ahead: %d with the load gate, %d without", late, offLate)
	}
}
