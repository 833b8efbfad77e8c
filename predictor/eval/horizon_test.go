package eval

import (
	"fmt"
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/tracegen"
)

// givenHorizonGaps are the rows (shape@rate) of TestQuietShapesGivenHorizon
// that are marked today, as docs/predictor-horizon.md reports them. Every
// other row must stay at 0 false marks, and a listed row that reaches 0
// fails the test too, so that the list cannot outlive the gap.
var givenHorizonGaps = map[string]bool{
	"serving-staircase-ho-with-horizon@10": true, "serving-staircase-ho-with-horizon@1": true,
	"vllm-start-ho-with-horizon@1":         true,
	"training-sawtooth-ho-with-horizon@10": true, "training-sawtooth-ho-with-horizon@1": true,
	"sealed-serving-warmup-with-horizon@10": true, "sealed-serving-warmup-with-horizon@1": true,
	"sealed-training-loop-with-horizon@1": true,
	"sealed-model-server-with-horizon@10": true, "sealed-model-server-with-horizon@1": true,
	"s2-pool-doubling-with-horizon@10":    true,
	"s2-model-repository-with-horizon@10": true, "s2-model-repository-with-horizon@1": true,
	"s2-engine-build-with-horizon@10": true,
	"s2-cache-flush-with-horizon@10":  true, "s2-cache-flush-with-horizon@1": true,
	"s2-loader-buffers-with-horizon@10": true, "s2-loader-buffers-with-horizon@1": true,
}

// TestQuietShapesGivenHorizon gives the quiet shapes of the first held-out
// set, of sealed set v1 and of the second sealed set a horizon (their
// planned end, as the horizon annotation would declare it), as
// TestQuietShapesWithHorizon does for the tuned ones: a warm-up, a load or
// a cache that levels off must not be projected to the declared end. Issue
// 29's bar asks this of one shape only (s2-train-warmup-horizon, in
// TestSealed2Shapes); these rows show how far it holds. -v prints the
// tables.
func TestQuietShapesGivenHorizon(t *testing.T) {
	rows, err := ScoreShapes(predictor.Config{}, quietWithHorizon(tracegen.HeldOutShapes(), tracegen.SealedShapes()), shapeSeeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", FormatShapes(rows))
	marked := map[string]int{}
	for _, r := range rows {
		marked[fmt.Sprintf("%s@%g", r.Shape, r.Hz)] = r.FalseMarks
	}
	var s2 []tracegen.SealedShape
	for _, s := range tracegen.Sealed2Shapes() {
		if !s.Growing && !s.WithHorizon {
			s.WithHorizon, s.Name = true, s.Name+"-with-horizon"
			s2 = append(s2, s)
		}
	}
	rows2, err := scoreSealed(sealedSet(s2), sealed2Seeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", formatSealed(rows2))
	for _, r := range rows2 {
		marked[fmt.Sprintf("%s@%g", r.Shape, r.Hz)] = r.FalseMarks
	}
	total := 0
	for key, n := range marked {
		total += n
		switch {
		case n > 0 && !givenHorizonGaps[key]:
			t.Errorf("%s: %d/%d quiet runs given a horizon marked", key, n, shapeSeeds)
		case n == 0 && givenHorizonGaps[key]:
			t.Errorf("%s is no longer marked: drop it from givenHorizonGaps and docs/predictor-horizon.md", key)
		}
	}
	t.Logf("quiet runs given a horizon marked: %d of %d", total, len(marked)*shapeSeeds)
}
