package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor/tracegen"
)

// sealed8Seeds is how many seeds of each shape and rate TestSealed8Shapes
// runs: seeds 0 to 99 of each shape (tracegen.Sealed8Seed0 places them).
const sealed8Seeds = 100

// sealed8Gaps are the rows (shape@rate) of the eighth sealed set that miss
// issue 29's bar with the predictor this file was written against, scored
// once on the sealer8 branch, whose predictor is main's at 0ff2399 (the
// same at 2761e1a, where the branch was rebased and scored again to the
// same table), as docs/predictor-sealed8.md reports them: 12 of 24 rows.
// Every other row is held to the bar with no tolerance, and a listed row
// that meets it fails the test too, so the list cannot outlive the gap.
// Only the lead updates it, from a run on the final predictor. Scored
// again on the tenth session's predictor (round seven, main at 7a0c1cc):
// the same 12 rows miss.
var sealed8Gaps = map[string]bool{
	"s8-batch-probe-horizon@10": true, "s8-batch-probe-horizon@1": true,
	"s8-kernel-matrix-rounds@10": true, "s8-kernel-matrix-rounds@1": true,
	"s8-undetached-state@1":          true,
	"s8-overload-no-backpressure@10": true, "s8-overload-no-backpressure@1": true,
	"s8-mesh-refine-horizon@10": true, "s8-mesh-refine-horizon@1": true,
	"s8-metric-state-horizon@10": true, "s8-metric-state-horizon@1": true,
}

// TestSealed8Shapes holds the predictor, with the agent's settings, to
// issue 29's bar on the eighth sealed held-out set
// (tracegen.Sealed8Shapes), written apart from the predictor and its
// tuning: 0 false marks on the quiet shapes at 10 Hz and 1 Hz; every
// growing run marked before its OOM, at least 5 s ahead at 10 Hz; with a
// horizon, marked by 25% of its way to the OOM. Rows in sealed8Gaps are
// reported, not held, and fail when they meet the bar. -v prints the table
// of docs/predictor-sealed8.md.
func TestSealed8Shapes(t *testing.T) {
	checkSealed(t, sealedSet(tracegen.Sealed8Shapes()), sealed8Seeds, sealed8Gaps, "sealed8Gaps", "docs/predictor-sealed8.md")
}
