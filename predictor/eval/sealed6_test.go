package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor/tracegen"
)

// sealed6Seeds is how many seeds of each shape and rate TestSealed6Shapes
// runs: seeds 0 to 99 of each shape (tracegen.Sealed6Seed0 places them).
const sealed6Seeds = 100

// sealed6Gaps are the rows (shape@rate) of the sixth sealed set that miss
// issue 29's bar with the predictor this file was written against (main at
// 749c47d, the round the fifth sealed set judged), as
// docs/predictor-sealed6.md reports them. Scored again on the eighth
// session's predictor (round five): the same 20 rows miss.
// Every other row is held to the bar with no tolerance, and a listed row
// that meets it fails the test too, so the list cannot outlive the gap.
// Only the lead updates it, from a run on the final predictor.
var sealed6Gaps = map[string]bool{
	"s6-bucket-rebuild@10": true, "s6-bucket-rebuild@1": true,
	"s6-gradual-unfreeze@10": true, "s6-gradual-unfreeze@1": true,
	"s6-lazy-pipeline@10": true, "s6-lazy-pipeline@1": true,
	"s6-arena-shrink@10": true, "s6-arena-shrink@1": true,
	"s6-streaming-groupby@10": true, "s6-streaming-groupby@1": true,
	"s6-instance-autoscale@10": true, "s6-instance-autoscale@1": true,
	"s6-index-rebuild@10": true, "s6-index-rebuild@1": true,
	"s6-prefetch-autotune@10": true, "s6-prefetch-autotune@1": true,
	"s6-snapshot-backlog-horizon@10": true, "s6-snapshot-backlog-horizon@1": true,
	"s6-dataset-cache-horizon@10": true, "s6-dataset-cache-horizon@1": true,
}

// TestSealed6Shapes holds the predictor, with the agent's settings, to
// issue 29's bar on the sixth sealed held-out set (tracegen.Sealed6Shapes),
// written apart from the predictor and its tuning: 0 false marks on the
// quiet shapes at 10 Hz and 1 Hz; every growing run marked before its OOM,
// at least 5 s ahead at 10 Hz; with a horizon, marked by 25% of its way to
// the OOM. Rows in sealed6Gaps are reported, not held, and fail when they
// meet the bar. -v prints the table of docs/predictor-sealed6.md.
func TestSealed6Shapes(t *testing.T) {
	checkSealed(t, sealedSet(tracegen.Sealed6Shapes()), sealed6Seeds, sealed6Gaps, "sealed6Gaps", "docs/predictor-sealed6.md")
}
