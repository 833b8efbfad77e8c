package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor/tracegen"
)

// sealed9Seeds is how many seeds of each shape and rate TestSealed9Shapes
// runs: seeds 0 to 99 of each shape (tracegen.Sealed9Seed0 places them).
const sealed9Seeds = 100

// sealed9Gaps are the rows (shape@rate) of the ninth sealed set that miss
// issue 29's bar with the predictor this file was written against, scored
// once on the sealer9 branch at bd2fc50, whose predictor is main's at
// 38cde7f (no file of the predictor changed on the branch), as
// docs/predictor-sealed9.md reports them: 19 of 24 rows. Every other row
// is held to the bar with no tolerance, and a listed row that meets it
// fails the test too, so the list cannot outlive the gap. Only the lead
// updates it, from a run on the final predictor. Scored once more on the
// twelfth session's predictor (round eight, docs/predictor-round8.md),
// its one judgement as held-out data: 18 rows miss; the set is tuning
// data from then on.
var sealed9Gaps = map[string]bool{
	"s9-pipeline-1f1b-stash@1":          true,
	"s9-allocator-reclaim-threshold@10": true, "s9-allocator-reclaim-threshold@1": true,
	"s9-graph-traversal-queries@10": true,
	"s9-fold-by-length-horizon@10":  true, "s9-fold-by-length-horizon@1": true,
	"s9-kfold-best-copy-horizon@10": true, "s9-kfold-best-copy-horizon@1": true,
	"s9-pinn-collocation-rounds@10": true, "s9-pinn-collocation-rounds@1": true,
	"s9-search-tree-reuse@10": true, "s9-search-tree-reuse@1": true,
	"s9-continual-task-anchors@10": true, "s9-continual-task-anchors@1": true,
	"s9-splat-densify-horizon@10": true, "s9-splat-densify-horizon@1": true,
	"s9-fanout-widening-horizon@10": true, "s9-fanout-widening-horizon@1": true,
}

// TestSealed9Shapes holds the predictor, with the agent's settings, to
// issue 29's bar on the ninth sealed held-out set
// (tracegen.Sealed9Shapes), written apart from the predictor and its
// tuning: 0 false marks on the quiet shapes at 10 Hz and 1 Hz; every
// growing run marked before its OOM, at least 5 s ahead at 10 Hz; with a
// horizon, marked by 25% of its way to the OOM. Rows in sealed9Gaps are
// reported, not held, and fail when they meet the bar. -v prints the table
// of docs/predictor-sealed9.md.
func TestSealed9Shapes(t *testing.T) {
	checkSealed(t, sealedSet(tracegen.Sealed9Shapes()), sealed9Seeds, sealed9Gaps, "sealed9Gaps", "docs/predictor-sealed9.md")
}
