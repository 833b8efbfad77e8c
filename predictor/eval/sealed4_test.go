package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor/tracegen"
)

// sealed4Seeds is how many seeds of each shape and rate TestSealed4Shapes
// runs: seeds 0 to 99 of each shape (tracegen.Sealed4Seed0 places them).
const sealed4Seeds = 100

// sealed4Gaps are the rows (shape@rate) of the fourth sealed set that miss
// issue 29's bar with the predictor this file was written against (main at
// the sealer branch's third round, 4bca60f; the predictor unchanged since
// badc6a9), as docs/predictor-sealed4.md reports them. Every other row is held to the bar with no tolerance, and a listed
// row that meets it fails the test too, so the list cannot outlive the gap.
// Only the lead updates it, from a run on the final predictor.
var sealed4Gaps = map[string]bool{
	"s4-pipeline-stages@10": true, "s4-pipeline-stages@1": true,
	"s4-embedding-shards@10": true, "s4-embedding-shards@1": true,
	"s4-sweep-trials@10":     true,
	"s4-rl-alternating@10":   true,
	"s4-diffusion-decode@10": true,
	"s4-video-streams@10":    true, "s4-video-streams@1": true,
	"s4-expert-cache@10": true, "s4-expert-cache@1": true,
	"s4-request-type-leak@10": true, "s4-request-type-leak@1": true,
	"s4-index-ingest@10": true, "s4-index-ingest@1": true,
	"s4-fragmentation-creep@10": true, "s4-fragmentation-creep@1": true,
	"s4-replay-buffer-horizon@10": true, "s4-replay-buffer-horizon@1": true,
	"s4-profiler-buffer-horizon@10": true, "s4-profiler-buffer-horizon@1": true,
}

// TestSealed4Shapes holds the predictor, with the agent's settings, to
// issue 29's bar on the fourth sealed held-out set (tracegen.Sealed4Shapes),
// written apart from the predictor and its tuning: 0 false marks on the
// quiet shapes at 10 Hz and 1 Hz; every growing run marked before its OOM,
// at least 5 s ahead at 10 Hz; with a horizon, marked by 25% of its way to
// the OOM. Rows in sealed4Gaps are reported, not held, and fail when they
// meet the bar. -v prints the table of docs/predictor-sealed4.md.
func TestSealed4Shapes(t *testing.T) {
	checkSealed(t, sealedSet(tracegen.Sealed4Shapes()), sealed4Seeds, sealed4Gaps, "sealed4Gaps", "docs/predictor-sealed4.md")
}
