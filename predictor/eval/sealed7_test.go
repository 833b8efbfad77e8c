package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor/tracegen"
)

// sealed7Seeds is how many seeds of each shape and rate TestSealed7Shapes
// runs: seeds 0 to 99 of each shape (tracegen.Sealed7Seed0 places them).
const sealed7Seeds = 100

// sealed7Gaps are the rows (shape@rate) of the seventh sealed set that miss
// issue 29's bar with the predictor this file was written against, scored
// once on main at 5780d93 (its predictor the same as at bd253d5, where the
// set's branch starts), as docs/predictor-sealed7.md reports them: 21 of
// 24 rows. Every other row is held to the bar with no tolerance, and a
// listed row that meets it fails the test too, so the list cannot outlive
// the gap. Only the lead updates it, from a run on the final predictor.
// Scored again on the ninth session's predictor (round six, main at
// 32a6736): the same 21 rows miss. Tuning data since; round eight
// (docs/predictor-round8.md) met the communicator churn: 19 rows.
var sealed7Gaps = map[string]bool{
	"s7-kv-preempt-cap@10": true, "s7-kv-preempt-cap@1": true,
	"s7-accum-first-step@10": true, "s7-accum-first-step@1": true,
	"s7-algo-search-spikes@10":  true,
	"s7-decode-high-water@10":   true,
	"s7-eval-generate-ramps@10": true, "s7-eval-generate-ramps@1": true,
	"s7-weight-averaging@10": true, "s7-weight-averaging@1": true,
	"s7-hook-pileup@1":       true,
	"s7-notebook-tenants@10": true, "s7-notebook-tenants@1": true,
	"s7-adapter-graph-pools@10": true, "s7-adapter-graph-pools@1": true,
	"s7-progressive-resize-horizon@10": true, "s7-progressive-resize-horizon@1": true,
	"s7-rollout-length-horizon@10": true, "s7-rollout-length-horizon@1": true,
}

// TestSealed7Shapes holds the predictor, with the agent's settings, to
// issue 29's bar on the seventh sealed held-out set
// (tracegen.Sealed7Shapes), written apart from the predictor and its
// tuning: 0 false marks on the quiet shapes at 10 Hz and 1 Hz; every
// growing run marked before its OOM, at least 5 s ahead at 10 Hz; with a
// horizon, marked by 25% of its way to the OOM. Rows in sealed7Gaps are
// reported, not held, and fail when they meet the bar. -v prints the table
// of docs/predictor-sealed7.md.
func TestSealed7Shapes(t *testing.T) {
	checkSealed(t, sealedSet(tracegen.Sealed7Shapes()), sealed7Seeds, sealed7Gaps, "sealed7Gaps", "docs/predictor-sealed7.md")
}
