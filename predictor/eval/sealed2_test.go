package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor/tracegen"
)

// sealed2Seeds is how many seeds of each shape and rate TestSealed2Shapes
// runs: seeds 0 to 99 of each shape (tracegen.Sealed2Seed0 places them).
const sealed2Seeds = 100

// sealed2Gaps are the rows (shape@rate) of the second sealed set that miss
// issue 29's bar today, as docs/predictor-sealed2.md reports them ("Tuned
// on from ..."): the set is tuning data since the fifth session. Every
// other row is held to the bar with no tolerance, and a listed row that
// meets it fails the test too, so that the list cannot outlive the gap.
var sealed2Gaps = map[string]bool{
	"s2-pool-doubling@10":    true,
	"s2-model-repository@10": true, "s2-model-repository@1": true,
	"s2-engine-build@10":     true,
	"s2-long-context-kv@10":  true,
	"s2-kv-batch-horizon@10": true, "s2-kv-batch-horizon@1": true,
}

// TestSealed2Shapes holds the predictor, with the agent's settings, to
// issue 29's bar on the second sealed held-out set
// (tracegen.Sealed2Shapes), written apart from the predictor and its
// tuning: 0 false marks on the quiet shapes at 10 Hz and 1 Hz; every
// growing run marked before its OOM, at least 5 s ahead at 10 Hz; with a
// horizon, marked by 25% of its way to the OOM. Rows in sealed2Gaps are
// reported, not held, and fail when they meet the bar. -v prints the
// table of docs/predictor-sealed2.md.
func TestSealed2Shapes(t *testing.T) {
	checkSealed(t, sealedSet(tracegen.Sealed2Shapes()), sealed2Seeds, sealed2Gaps, "sealed2Gaps", "docs/predictor-sealed2.md")
}
