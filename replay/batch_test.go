package replay

import "testing"

// Once arrivals stop (here: all at time zero, then five finished runs),
// migpro+plan serves the rest of the batch shortest expected run first; an
// arrival brings the queue back to arrival order. On one A100 every job takes the whole GPU,
// so they run one at a time: long jobs (100 s) and short ones (10 s) of two
// workloads alternate in the first five, which teaches the expected run
// times, then two long and two short jobs wait in that order.
func TestBatchServesShortestExpectedFirst(t *testing.T) {
	whole := func(id, key string, arrival, run float64) Job {
		return Job{ID: id, Key: key, Arrival: arrival, FullRuntime: run, Mem: Fixed(30 * GiB), Profile: "7g.40gb"}
	}
	batch := []Job{
		whole("L1", "long", 0, 100), whole("S1", "short", 0, 10), whole("L2", "long", 0, 100),
		whole("S2", "short", 0, 10), whole("L3", "long", 0, 100),
		whole("L4", "long", 0, 100), whole("L5", "long", 0, 100), whole("S3", "short", 0, 10), whole("S4", "short", 0, 10),
	}
	started := func(pol Strategy, jobs []Job) map[string]float64 {
		out := map[string]float64{}
		for _, r := range simRun(t, jobs, oneGPU, pol).Runs {
			out[r.Job] = r.Started
		}
		return out
	}
	plan := policy(t, "migpro+plan")
	noBatch := plan
	noBatch.BatchShortest = false

	if s := started(noBatch, batch); s["L4"] > s["S3"] {
		t.Errorf("without BatchShortest S3 started at %.0f s before L4 at %.0f s; want arrival order", s["S3"], s["L4"])
	}
	s := started(plan, batch)
	if !(s["S3"] < s["S4"] && s["S4"] < s["L4"] && s["L4"] < s["L5"]) {
		t.Errorf("batch order started S3 %.0f, S4 %.0f, L4 %.0f, L5 %.0f s; want S3, S4, L4, L5", s["S3"], s["S4"], s["L4"], s["L5"])
	}

	// A job arriving while S3 runs ends the batch: L4 and L5 arrived
	// before S4, so they start before it again.
	late := append(append([]Job(nil), batch...), whole("X", "other", s["S3"]+5, 10))
	s = started(plan, late)
	if !(s["S3"] < s["L4"] && s["L4"] < s["L5"] && s["L5"] < s["S4"] && s["S4"] < s["X"]) {
		t.Errorf("after an arrival started S3 %.0f, L4 %.0f, L5 %.0f, S4 %.0f, X %.0f s; want that order", s["S3"], s["L4"], s["L5"], s["S4"], s["X"])
	}
}
