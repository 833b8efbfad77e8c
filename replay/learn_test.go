package replay

import "testing"

// With the history alone, a run that runs out of memory teaches the
// workload's history, and the runs of that workload not yet started begin
// on a profile holding what it showed. On one A100 two blockers leave room
// for one small instance; chat-1 names a 1g.5gb (so the predictor leaves
// it alone) but grows to 8 GiB and runs out. chat-2 queued behind it before
// that, chat-3 arrives after: under migpro+plan (Policy.Learn) both start
// on a larger profile, so the workload restarts once. With the history off,
// each of the three runs out on its 1g.5gb. chat-2 waits while chat-1 runs,
// so it is re-sized in the queue, before the scan's packing pass could
// start it.
func TestHistoryTeachesLaterRunsWithoutThePredictor(t *testing.T) {
	jobs := chatsBehindBlockers()
	for i := range jobs {
		if jobs[i].Key == "chat" {
			jobs[i].Profile = "1g.5gb"
		}
	}
	pol := policy(t, "migpro+plan")
	if !pol.Learn || pol.Predict {
		t.Fatalf("migpro+plan: Learn %v, Predict %v; want the history without the estimator", pol.Learn, pol.Predict)
	}
	r := simRun(t, jobs, oneGPU, pol)
	if r.Restarts != 1 || r.Marks != 0 {
		t.Errorf("%d restarts (%d marked), want 1 unmarked (chat-1's OOM): runs %+v", r.Restarts, r.Marks, r.Runs)
	}
	first := firstProfiles(r)
	for _, id := range []string{"chat-2", "chat-3"} {
		if first[id] == "1g.5gb" || first[id] == "" {
			t.Errorf("%s first ran on %q, want a profile larger than the 1g.5gb chat-1 ran out on", id, first[id])
		}
	}

	pol.Learn = false
	if r := simRun(t, jobs, oneGPU, pol); r.Restarts != 3 {
		t.Errorf("without the history: %d restarts, want 3 (each chat runs out once)", r.Restarts)
	}
}

// Under migpro+plan the predictor moves a run before it runs out only when
// migpro chose its profile from the memory its user declared. chat-1
// declares 3 GiB and grows to 8 GiB: asked for by memory, it is marked and
// moved before its 1g.5gb runs out; asked for as a 1g.5gb by name, it runs
// out instead.
func TestPredictorWatchesOnlyRunsSizedFromDeclaredMemory(t *testing.T) {
	jobs := chatsBehindBlockers()[:3]
	pol := policy(t, "migpro+plan")
	r := simRun(t, jobs, oneGPU, pol)
	if r.Restarts != 1 || r.Marks != 1 {
		t.Errorf("declared 3 GiB: %d restarts (%d marked), want 1 marked before the OOM: runs %+v", r.Restarts, r.Marks, r.Runs)
	}
	jobs[2].Profile = "1g.5gb"
	r = simRun(t, jobs, oneGPU, pol)
	if r.Restarts != 1 || r.Marks != 0 {
		t.Errorf("named 1g.5gb: %d restarts (%d marked), want 1 OOM, unmarked: runs %+v", r.Restarts, r.Marks, r.Runs)
	}
}

// The history moves a job off the profile it asked for only when a run of
// its workload proved that profile too small. A run of "over" declares its
// own peak, just above a 1g.5gb, and finishes on a 1g.10gb; the next run of
// it names 1g.5gb and needs 90% of it. Declared correctly, it keeps its
// 1g.5gb under migpro+plan, where migpro+predict (whose history records
// every peak) moves it up.
func TestHistoryKeepsAProfileDeclaredCorrectly(t *testing.T) {
	m := model(t)
	small, ok := m.Profile("1g.5gb")
	if !ok {
		t.Fatal("no 1g.5gb on the A100")
	}
	run := func(id string, arrival float64, mem uint64, profile string) Job {
		return Job{ID: id, Key: "over", Arrival: arrival, FullRuntime: 10, Mem: Fixed(mem), Declared: mem, Profile: profile}
	}
	jobs := []Job{
		run("over-1", 0, small.Memory*102/100, "1g.10gb"),
		run("over-2", 100, small.Memory*90/100, "1g.5gb"),
	}
	on := func(pol string) string {
		for _, r := range simRun(t, jobs, oneGPU, policy(t, pol)).Runs {
			if r.Job == "over-2" {
				return r.Profile
			}
		}
		t.Fatalf("%s: over-2 never ran", pol)
		return ""
	}
	if got := on("migpro+plan"); got != "1g.5gb" {
		t.Errorf("migpro+plan ran over-2 on %s; want the 1g.5gb it names and declares correctly", got)
	}
	if got := on("migpro+predict"); got == "1g.5gb" {
		t.Errorf("migpro+predict ran over-2 on 1g.5gb; want it moved up by the recorded peak")
	}
}

// On the llm batch, whose runs outgrow what their users declare, no run of
// migpro+plan starts on a profile its workload had already run out of
// memory on, or been moved off by the predictor: every waiting run is
// re-sized before the scan that could start it. Without the history, runs
// of the same workload keep starting on profiles too small, and the batch
// restarts far more often.
func TestHistoryStartsNoRunWhereItsWorkloadRanOut(t *testing.T) {
	m := model(t)
	jobs := mix(t, "llm", 120, 1)
	key := map[string]string{}
	for _, j := range jobs {
		key[j.ID] = j.Key
	}
	cfg := Config{Nodes: 1, GPUsPerNode: 8, Seed: 1}
	pol := policy(t, "migpro+plan")
	r := simRun(t, jobs, cfg, pol)
	// ranOut is, per workload, the runs that ran out, in the order they
	// ended.
	ranOut := map[string][]RunRecord{}
	for _, run := range r.Runs {
		if run.Outcome != Finished {
			ranOut[key[run.Job]] = append(ranOut[key[run.Job]], run)
		}
	}
	for _, run := range r.Runs {
		mem, _ := m.Profile(run.Profile)
		for _, out := range ranOut[key[run.Job]] {
			if out.Ended >= run.Granted {
				break
			}
			if had, _ := m.Profile(out.Profile); mem.Memory <= had.Memory {
				t.Errorf("%s started at %.0f s on %s; its workload ran out on %s at %.0f s", run.Job, run.Granted, run.Profile, out.Profile, out.Ended)
			}
		}
	}
	pol.Learn = false
	without := simRun(t, jobs, cfg, pol)
	if 3*r.Restarts > 2*without.Restarts {
		t.Errorf("%d restarts with the history, %d without; want at most two thirds", r.Restarts, without.Restarts)
	}
}
