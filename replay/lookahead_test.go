package replay

import (
	"fmt"
	"testing"
)

// onlineCase is one of BenchmarkPolicies' online streams.
func onlineCase(t *testing.T, model string, gpus int, load float64, seed uint64) ([]Job, Config) {
	t.Helper()
	m, err := LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := Generate(MixSpec{Name: "online", Jobs: 600, Seed: seed, Load: load, GPUs: gpus}, m)
	if err != nil {
		t.Fatal(err)
	}
	return jobs, Config{Model: model, Nodes: 1, GPUsPerNode: gpus, Seed: 1}
}

// On two A100s at load 0.9 (seed 1), planning over the known queue cuts
// first-fit's mean JCT by more than 10% (measured: first-fit's is 1.18×
// migpro+plan's; 1.21× before the agent widened in place). Against
// migpro+reserve the planner no longer leads: since a caller that takes any
// instance holding its profile is given the wider profile of the same memory
// slots (partitioner.AllocateHolding, docs/replay-round7.md), which
// migpro+reserve models too, it is 0.97× migpro+plan's (was 1.26×); and
// since Partitioner.ReserveFor holds the placement whose runs were handed
// over longest ago, migpro+reserve's reservations drain sooner and it is
// 0.93× (1389 s against 1487 s), so the test asks only that the planner
// not fall more than 10% behind it.
func TestPlanBeatsArrivalOrder(t *testing.T) {
	jobs, cfg := onlineCase(t, "a100-40gb", 2, 0.9, 1)
	ff := simRun(t, jobs, cfg, policy(t, "first-fit"))
	res := simRun(t, jobs, cfg, policy(t, "migpro+reserve"))
	plan := simRun(t, jobs, cfg, policy(t, "migpro+plan"))
	if plan.Moves == 0 {
		t.Fatal("the planner moved nothing")
	}
	if r := ff.MeanJCT / plan.MeanJCT; r < 1.10 {
		t.Errorf("first-fit mean JCT %.0f s ÷ migpro+plan's %.0f s = %.3f, want ≥ 1.10", ff.MeanJCT, plan.MeanJCT, r)
	}
	if r := res.MeanJCT / plan.MeanJCT; r < 0.90 {
		t.Errorf("migpro+reserve mean JCT %.0f s ÷ migpro+plan's %.0f s = %.3f, want ≥ 0.90", res.MeanJCT, plan.MeanJCT, r)
	}
}

// The planner's forward simulations start every run where it runs (a run
// that could not would fail the simulation), and the planned run keeps the
// engine's invariants at every instant, on one model and on a mixed node.
func TestPlanKeepsTheInvariants(t *testing.T) {
	for _, c := range []struct {
		model string
		gpus  int
	}{{"a100-40gb", 2}, {"a100-40gb:2,h100-80gb:1", 3}} {
		jobs, cfg := onlineCase(t, c.model, c.gpus, 0.9, 2)
		cfg.Check = true
		r := simRun(t, jobs[:200], cfg, policy(t, "migpro+plan"))
		if r.Moves == 0 {
			t.Errorf("%s: the planner moved nothing in 200 jobs", c.model)
		}
		for i, done := range r.Completions {
			if done < jobs[i].Arrival {
				t.Fatalf("%s: job %s done at %.0f s, before its arrival at %.0f s", c.model, jobs[i].ID, done, jobs[i].Arrival)
			}
		}
	}
}

// A batch arrives at once, so no arrival comes to plan at: the planner
// plans at finished runs instead, once a run time is known. On 200 jobs of
// the small mix at time zero on eight A100s it moves jobs and cuts mean JCT
// below first-fit's, which migpro+reserve's arrival order only ties. The
// planner is measured alone here (migpro+plan without its batch order,
// which leaves it little to move); the batch order cuts it further
// (measured: 1.028×).
func TestPlanPlansABatch(t *testing.T) {
	jobs, err := Generate(MixSpec{Name: "small", Jobs: 200, Seed: 1}, model(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Nodes: 1, GPUsPerNode: 8, Seed: 1}
	ff := simRun(t, jobs, cfg, policy(t, "first-fit"))
	res := simRun(t, jobs, cfg, policy(t, "migpro+reserve"))
	alone := policy(t, "migpro+plan")
	alone.BatchShortest = false
	plan := simRun(t, jobs, cfg, alone)
	batch := simRun(t, jobs, cfg, policy(t, "migpro+plan"))
	if r := ff.MeanJCT / res.MeanJCT; r > 1.01 {
		t.Fatalf("first-fit ÷ migpro+reserve mean JCT %.3f: arrival order should tie first-fit here (test premise)", r)
	}
	if plan.Moves == 0 {
		t.Fatal("the planner moved nothing in a batch")
	}
	if r := ff.MeanJCT / plan.MeanJCT; r < 1.03 {
		t.Errorf("first-fit's mean JCT %.0f s ÷ the planner's alone %.0f s = %.3f, want ≥ 1.03", ff.MeanJCT, plan.MeanJCT, r)
	} else {
		t.Logf("first-fit ÷ the planner alone %.3f, ÷ migpro+reserve %.3f, %d moves", r, ff.MeanJCT/res.MeanJCT, plan.Moves)
	}
	if r := plan.MeanJCT / batch.MeanJCT; r < 1.02 {
		t.Errorf("the planner's mean JCT %.0f s ÷ migpro+plan's with its batch order %.0f s = %.3f, want ≥ 1.02", plan.MeanJCT, batch.MeanJCT, r)
	} else {
		t.Logf("the planner alone ÷ migpro+plan %.3f", r)
	}
}

// While no more jobs wait than half the node's GPUs, a plan moves no job past
// a waiting whole-GPU job (one the planner did not move itself); with a
// longer queue it may move any.
func TestPlanPassesNoWaitingWholeGPUJobAtLightLoad(t *testing.T) {
	m := model(t)
	prof := func(name string) Profile {
		p, ok := m.Profile(name)
		if !ok {
			t.Fatalf("no profile %s", name)
		}
		return p
	}
	waiting := func(names ...string) []*jobState {
		var out []*jobState
		for i, n := range names {
			out = append(out, &jobState{job: &Job{ID: fmt.Sprint(i)}, idx: i, profile: prof(n)})
		}
		return out
	}
	e := &engine{cfg: Config{Nodes: 1, GPUsPerNode: 8}, model: m}
	for _, c := range []struct {
		queue []*jobState
		moved int // index of a job the planner moved, or -1
		want  int
	}{
		{waiting("1g.5gb", "7g.40gb", "1g.5gb", "2g.10gb"), -1, 1},
		{waiting("7g.40gb", "1g.5gb", "7g.40gb"), -1, 0},
		{waiting("7g.40gb", "7g.40gb", "1g.5gb"), 0, 1},
		{waiting("1g.5gb", "3g.20gb", "4g.20gb", "1g.5gb"), -1, 4},
		{waiting("1g.5gb", "7g.40gb", "1g.5gb", "2g.10gb", "1g.5gb"), -1, 5},
	} {
		if c.moved >= 0 {
			moveToFront(c.queue[c.moved], 1)
		}
		e.queue = c.queue
		var names []string
		for _, j := range c.queue {
			names = append(names, j.profile.Name)
		}
		if got := e.passLimit(); got != c.want {
			t.Errorf("queue %v (moved: %d) on 8 GPUs: pass limit %d, want %d", names, c.moved, got, c.want)
		}
	}
}

// On eight A100s at load 0.8 (seed 1) the queue is short and a whole-GPU
// request waits only for one GPU to drain. Moves past it cost it more than
// they gave the others (migpro+plan's mean JCT was 0.9985× first-fit's
// before passLimit); without them migpro+plan is ahead of first-fit
// (measured 1.014×) and its 7g requests are not slower than under first-fit.
func TestPlanLeavesWholeGPURequestsTheirTurnAtLightLoad(t *testing.T) {
	jobs, cfg := onlineCase(t, "a100-40gb", 8, 0.8, 1)
	ff := simRun(t, jobs, cfg, policy(t, "first-fit"))
	plan := simRun(t, jobs, cfg, policy(t, "migpro+plan"))
	if r := ff.MeanJCT / plan.MeanJCT; r < 1.005 {
		t.Errorf("first-fit's mean JCT %.0f s ÷ migpro+plan's %.0f s = %.4f, want ≥ 1.005", ff.MeanJCT, plan.MeanJCT, r)
	}
	whole := func(r *Result) float64 {
		sum, n := 0.0, 0
		for i, j := range jobs {
			if j.Profile == "7g.40gb" {
				sum += r.Completions[i] - j.Arrival
				n++
			}
		}
		if n == 0 {
			t.Fatal("no 7g.40gb request in the stream (test premise)")
		}
		return sum / float64(n)
	}
	if p, f := whole(plan), whole(ff); p > f {
		t.Errorf("7g.40gb mean JCT %.0f s under migpro+plan, %.0f s under first-fit; want no more", p, f)
	}
}

// TestPlanRunsOnManyNodes replays a stream on three 8-GPU nodes under
// migpro+plan. The forward simulation's pinned runs used to mark the other
// nodes full for the scan, which hid their own node from the pinned runs
// after them, and a waiting job took their slots ("no room: must wait").
func TestPlanRunsOnManyNodes(t *testing.T) {
	jobs, err := Generate(MixSpec{Name: "stream", Jobs: 400, Seed: 1, GPUs: 24}, model(t))
	if err != nil {
		t.Fatal(err)
	}
	r := simRun(t, jobs, Config{Nodes: 3, GPUsPerNode: 8, Seed: 1, Check: true}, policy(t, "migpro+plan"))
	if r.Jobs != 400 || len(r.Completions) != 400 {
		t.Fatalf("jobs %d, completions %d, want 400", r.Jobs, len(r.Completions))
	}
}
