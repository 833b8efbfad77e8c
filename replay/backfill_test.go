package replay

import (
	"math"
	"testing"
)

// A reservation for a 7g on the only GPU, which a 3g will hold until about
// t = 900 s as its workload's history says. A 1g expected to end well
// before then starts in the held slots (backfill); a 1g of a workload whose
// runs last longer than the 3g has left waits for the 7g, which still
// starts when the 3g ends.
func TestBackfillEndsBeforeTheReservationNeedsTheSlots(t *testing.T) {
	jobs := []Job{
		// History: runs of each workload, all ended by t = 420 s.
		{ID: "hist-7g", FullRuntime: 10, Mem: Fixed(30 * GiB), Profile: "7g.40gb", Key: "big"},
		{ID: "hist-train", Arrival: 20, FullRuntime: 400, Mem: Fixed(10 * GiB), Profile: "3g.20gb", Key: "train"},
		{ID: "hist-infer", Arrival: 20, FullRuntime: 20, Mem: Fixed(2 * GiB), Profile: "1g.5gb", Key: "infer"},
		{ID: "hist-slow", Arrival: 20, FullRuntime: 300, Mem: Fixed(2 * GiB), Profile: "1g.5gb", Key: "slow"},
		// The 3g holds the GPU from 500 s to 900 s; the 7g arrives behind it
		// and, after 8 × 10 s of waiting, gets the whole GPU reserved.
		{ID: "train", Arrival: 500, FullRuntime: 400, Mem: Fixed(10 * GiB), Profile: "3g.20gb", Key: "train"},
		{ID: "big", Arrival: 501, FullRuntime: 10, Mem: Fixed(30 * GiB), Profile: "7g.40gb", Key: "big"},
		// Expected to end at 620 s, before 900 s: backfilled.
		{ID: "infer", Arrival: 600, FullRuntime: 20, Mem: Fixed(2 * GiB), Profile: "1g.5gb", Key: "infer"},
		// Expected to end at 910 s, after 900 s: waits for the 7g.
		{ID: "slow", Arrival: 610, FullRuntime: 300, Mem: Fixed(2 * GiB), Profile: "1g.5gb", Key: "slow"},
	}
	cfg := oneGPU
	cfg.NoNVMLCost, cfg.Check = true, true
	r := simRun(t, jobs, cfg, policy(t, "migpro+reserve"))
	started := map[string]float64{}
	for _, run := range r.Runs {
		started[run.Job] = run.Started
	}
	if r.Reservations == 0 {
		t.Fatalf("no reservation was made (test premise)")
	}
	if r.Backfills != 1 {
		t.Errorf("%d backfills, want 1 (infer)", r.Backfills)
	}
	if got := started["infer"]; got != 600 {
		t.Errorf("infer started at %.0f s, want at its arrival (600 s), in the reserved slots", got)
	}
	if got := started["big"]; math.Abs(got-900) > 1e-6 {
		t.Errorf("the 7g started at %.0f s, want when the 3g ends (900 s)", got)
	}
	if got := started["slow"]; got < started["big"] {
		t.Errorf("slow started at %.0f s, before the 7g (%.0f s): it was expected to end after the 3g", got, started["big"])
	}
	// Without reservations nothing is held and nothing is backfilled: the
	// 1g jobs start at once and the 7g waits for them.
	plain := simRun(t, jobs, cfg, policy(t, "migpro"))
	if plain.Backfills != 0 || plain.Reservations != 0 {
		t.Errorf("migpro: %d reservations, %d backfills; want none", plain.Reservations, plain.Backfills)
	}
}
