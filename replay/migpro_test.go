package replay

import (
	"fmt"
	"math"
	"testing"
)

// The stream of issue 12 on one A100, every job long enough to hold its
// instance until all have arrived: migpro and first-fit run all five at
// once; the plain reachability count strands slot 7 and the fifth waits.
func TestMigproServesTheIssueStreamAtOnce(t *testing.T) {
	var jobs []Job
	for i, p := range []string{"1g.5gb", "1g.5gb", "3g.20gb", "1g.5gb", "1g.5gb"} {
		jobs = append(jobs, Job{ID: fmt.Sprintf("j%d-%s", i, p), Arrival: float64(i), FullRuntime: 1000, Mem: Fixed(2 * GiB), Profile: p})
	}
	for _, c := range []struct {
		policy string
		waits  int
	}{{"migpro", 0}, {"first-fit", 0}, {"reachability", 1}} {
		r := simRun(t, jobs, oneGPU, policy(t, c.policy))
		if r.Waits != c.waits {
			t.Errorf("%s: %d jobs waited, want %d", c.policy, r.Waits, c.waits)
		}
	}
}

// A 7g behind a stream of 1g jobs that keeps the only GPU partly busy: with
// backfill alone the 7g waits until the stream ends; with a reservation it
// runs once the GPU drains, long before.
func TestReservationStopsStarvation(t *testing.T) {
	jobs := []Job{{ID: "first-1g", FullRuntime: 300, Mem: Fixed(2 * GiB), Profile: "1g.5gb"},
		{ID: "big-7g", Arrival: 1, FullRuntime: 100, Mem: Fixed(30 * GiB), Profile: "7g.40gb"}}
	for i := 0; i < 200; i++ { // a new 1g every 40 s, each running 200 s: about five busy, never none
		jobs = append(jobs, Job{ID: fmt.Sprintf("s-%d", i), Arrival: 2 + 40*float64(i), FullRuntime: 200, Mem: Fixed(2 * GiB), Profile: "1g.5gb"})
	}
	done := func(r *Result) float64 {
		for _, run := range r.Runs {
			if run.Job == "big-7g" {
				return run.Ended
			}
		}
		t.Fatal("big-7g never ran")
		return 0
	}
	plain := simRun(t, jobs, oneGPU, policy(t, "migpro"))
	resv := simRun(t, jobs, oneGPU, policy(t, "migpro+reserve"))
	if got := done(plain); got < 7000 {
		t.Fatalf("without a reservation the 7g ended at %.0f s; the stream should have starved it (test premise)", got)
	}
	if got := done(resv); got > 2000 {
		t.Errorf("with a reservation the 7g ended at %.0f s, want it served once the GPU drains (< 2000 s)", got)
	}
	if resv.Reservations == 0 {
		t.Errorf("no reservation was made")
	}
}

// Re-placing idle instances is what the partitioner does before it makes a
// job wait: on generated online streams no job ever waits while some GPU's
// free and idle space could hold it.
func TestNoWaitIsFixableByIdleInstances(t *testing.T) {
	jobs, err := Generate(MixSpec{Name: "online", Jobs: 300, Seed: 3, GPUs: 2}, model(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"migpro", "first-fit", "reachability"} {
		r := simRun(t, jobs, Config{Nodes: 1, GPUsPerNode: 2, Check: true}, policy(t, name))
		if r.Waits == 0 {
			t.Fatalf("%s: no job waited; the test needs a loaded cluster", name)
		}
		if r.Replaceable != 0 {
			t.Errorf("%s: %d of %d waits could have been served by re-placing idle instances", name, r.Replaceable, r.Waits)
		}
	}
}

// Placement against first-fit on online streams (A100, 2, 4 and 8 GPUs,
// load 0.8 and 0.9, the tuning seeds 1, 2 and 7 to 18): the geometric mean
// of first-fit's mean JCT over migpro's must stay at the measured 1.120 and
// no stream may fall behind first-fit (worst measured 1.008), since a caller
// that takes any instance holding its profile gets the wider profile of the
// same memory slots where a slice would idle (an A100's 3g.20gb at slot 0
// made as 4g.20gb, docs/replay-round7.md). Before that: 1.017 and 0.864
// (with a layout counting only the profiles a node was asked for and
// packing onto the busier GPU ahead of the capacity loss; 1.031 and 0.940
// on seeds 1 and 2 alone before the first of those, so two seeds were too
// few to judge it; docs/replay-findings.md).
// Issue 12 asks for 1.15 with no stream below 1; the second half is now
// met, the first is not (docs/replay-results.md says why), and these
// bounds catch a regression from what is.
func TestMigproBeatsFirstFitByTheMeasuredMargin(t *testing.T) {
	sum, n, worst := 0.0, 0, math.Inf(1)
	for _, gpus := range []int{2, 4, 8} {
		for _, load := range []float64{0.8, 0.9} {
			for _, seed := range []uint64{1, 2, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18} {
				jobs, err := Generate(MixSpec{Name: "online", Jobs: 600, Seed: seed, Load: load, GPUs: gpus}, model(t))
				if err != nil {
					t.Fatal(err)
				}
				cfg := Config{Nodes: 1, GPUsPerNode: gpus, Seed: 1}
				ff := simRun(t, jobs, cfg, policy(t, "first-fit"))
				mp := simRun(t, jobs, cfg, policy(t, "migpro"))
				sum += math.Log(ff.MeanJCT / mp.MeanJCT)
				worst = min(worst, ff.MeanJCT/mp.MeanJCT)
				n++
			}
		}
	}
	g := math.Exp(sum / float64(n))
	if g < 1.11 {
		t.Errorf("first-fit ÷ migpro mean JCT, geometric mean over %d streams: %.3f, want ≥ 1.11 (measured 1.120)", n, g)
	}
	if worst < 1 {
		t.Errorf("first-fit ÷ migpro mean JCT, worst of %d streams: %.3f, want ≥ 1 (measured 1.008)", n, worst)
	}
	t.Logf("first-fit ÷ migpro mean JCT over %d streams: geometric mean %.4f, worst %.4f", n, g, worst)
}

// The agent's --reserve-after, replayed: a 7g behind a stream of 1g jobs
// dense enough to keep every GPU partly busy starves under migpro; with
// migpro+reserve-after (a reservation once it has waited 120 s, as the
// agent gives a local caller) it runs once one GPU drains, on a node of
// three GPUs. On two GPUs the agent never reserves, and neither does the
// replay.
func TestReserveAfterIsTheAgentsRule(t *testing.T) {
	jobs := []Job{{ID: "big-7g", Arrival: 505, FullRuntime: 100, Mem: Fixed(30 * GiB), Profile: "7g.40gb"}}
	for i := 0; i < 600; i++ { // a new 1g every 10 s, each running 200 s: about 20 busy of 21 slots
		jobs = append(jobs, Job{ID: fmt.Sprintf("s-%d", i), Arrival: 10 * float64(i), FullRuntime: 200, Mem: Fixed(2 * GiB), Profile: "1g.5gb"})
	}
	started := func(r *Result) float64 {
		for _, run := range r.Runs {
			if run.Job == "big-7g" {
				return run.Started
			}
		}
		t.Fatal("big-7g never ran")
		return 0
	}
	three := Config{Nodes: 1, GPUsPerNode: 3, NoNVMLCost: true, Check: true}
	plain := simRun(t, jobs, three, policy(t, "migpro"))
	resv := simRun(t, jobs, three, policy(t, "migpro+reserve-after"))
	if got := started(plain); got < 3500 {
		t.Fatalf("without a reservation the 7g started at %.0f s; the stream should have starved it (test premise)", got)
	}
	if got := started(resv); got > 505+120+200+10 {
		t.Errorf("with --reserve-after 2m the 7g started at %.0f s, want it once a GPU drains after 120 s (by 835 s)", got)
	}
	if resv.Reservations == 0 || plain.Reservations != 0 {
		t.Errorf("reservations: %d with reserve-after, %d without; want some and none", resv.Reservations, plain.Reservations)
	}
	two := three
	two.GPUsPerNode = 2
	if r := simRun(t, jobs, two, policy(t, "migpro+reserve-after")); r.Reservations != 0 {
		t.Errorf("on two GPUs: %d reservations, want none (partitioner.MinReserveGPUs)", r.Reservations)
	}
	if p, _ := ParsePolicies("migpro+reserve-after"); p[0].SimulatorOnly() {
		t.Error("migpro+reserve-after is what the agent does with --reserve-after 2m, not simulator only")
	}
}
