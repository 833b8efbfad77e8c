package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor/tracegen"
)

// sealed5Seeds is how many seeds of each shape and rate TestSealed5Shapes
// runs: seeds 0 to 99 of each shape (tracegen.Sealed5Seed0 places them).
const sealed5Seeds = 100

// sealed5Gaps are the rows (shape@rate) of the fifth sealed set that miss
// issue 29's bar with the predictor this file was written against (main at
// 793f1c9; the predictor's code unchanged since 186dc33, the round the
// fourth sealed set judged), as docs/predictor-sealed5.md reports them.
// Scored again on the seventh session's predictor (round four): the same
// 20 rows miss.
// Every other row is held to the bar with no tolerance, and a listed row
// that meets it fails the test too, so the list cannot outlive the gap.
// Only the lead updates it, from a run on the final predictor.
var sealed5Gaps = map[string]bool{
	"s5-version-swap@10": true, "s5-version-swap@1": true,
	"s5-spill-limit@10": true, "s5-spill-limit@1": true,
	"s5-checkpoint-gather@10": true, "s5-checkpoint-gather@1": true,
	"s5-worker-processes@10": true, "s5-worker-processes@1": true,
	"s5-gc-cycles@10": true, "s5-gc-cycles@1": true,
	"s5-traffic-ramp@10": true, "s5-traffic-ramp@1": true,
	"s5-backlog-queue@10": true, "s5-backlog-queue@1": true,
	"s5-adapter-hoard@10": true, "s5-adapter-hoard@1": true,
	"s5-moe-imbalance-horizon@10": true, "s5-moe-imbalance-horizon@1": true,
	"s5-orphan-evaluators-horizon@10": true, "s5-orphan-evaluators-horizon@1": true,
}

// TestSealed5Shapes holds the predictor, with the agent's settings, to
// issue 29's bar on the fifth sealed held-out set (tracegen.Sealed5Shapes),
// written apart from the predictor and its tuning: 0 false marks on the
// quiet shapes at 10 Hz and 1 Hz; every growing run marked before its OOM,
// at least 5 s ahead at 10 Hz; with a horizon, marked by 25% of its way to
// the OOM. Rows in sealed5Gaps are reported, not held, and fail when they
// meet the bar. -v prints the table of docs/predictor-sealed5.md.
func TestSealed5Shapes(t *testing.T) {
	checkSealed(t, sealedSet(tracegen.Sealed5Shapes()), sealed5Seeds, sealed5Gaps, "sealed5Gaps", "docs/predictor-sealed5.md")
}
