package replay

import "testing"

// A restart teaches the key's history what the workload needs, and runs of
// the same workload that have not started yet begin on a profile that holds
// it. On one A100 two blockers leave room for one small instance. chat-1
// declares 3 GiB (a 1g.5gb) but grows to 8 GiB: the predictor moves it up.
// chat-2 queued behind it before that and chat-3 arrives after it: both
// start on the larger profile, so the workload restarts once, not three
// times.
func TestRestartTeachesWaitingRunsOfTheWorkload(t *testing.T) {
	jobs := chatsBehindBlockers()
	cfg := oneGPU
	cfg.Seed = 3
	r := simRun(t, jobs, cfg, policy(t, "migpro+predict"))
	movedTo := ""
	for _, run := range r.Runs {
		if run.Job == "chat-1" && run.Outcome == Finished {
			movedTo = run.Profile
		}
	}
	first := firstProfiles(r)
	if r.Restarts != 1 {
		t.Errorf("%d restarts, want 1 (chat-1's): runs %+v", r.Restarts, r.Runs)
	}
	for _, id := range []string{"chat-2", "chat-3"} {
		if got := first[id]; got == "1g.5gb" || got == "" {
			t.Errorf("%s first ran on %q, want what chat-1 was moved to (%s)", id, got, movedTo)
		}
	}
}

// A named profile is kept while the workload's recorded peak fits it: the
// estimator's margin over that peak does not move the request. On one A100
// a run of "fits" peaks at 95% of a 1g.5gb and finishes; the next run of it,
// which names 1g.5gb and needs 90%, starts there (the recorded 95% plus the
// estimator's 10% margin would not fit). A run of "over" peaks just above a
// 1g.5gb (it asked for a 1g.10gb); the next, which names 1g.5gb and itself
// needs less, starts on a larger profile, since the history shows the
// workload outgrew it.
func TestNamedProfileKeptWhileTheRecordedPeakFits(t *testing.T) {
	m := model(t)
	small, ok := m.Profile("1g.5gb")
	if !ok {
		t.Fatal("no 1g.5gb on the A100")
	}
	run := func(id, key string, arrival float64, mem uint64, profile string) Job {
		return Job{ID: id, Key: key, Arrival: arrival, FullRuntime: 10, Mem: Fixed(mem), Profile: profile}
	}
	jobs := []Job{
		run("fits-1", "fits", 0, small.Memory*95/100, "1g.5gb"),
		run("fits-2", "fits", 100, small.Memory*90/100, "1g.5gb"),
		run("over-1", "over", 200, small.Memory*102/100, "1g.10gb"),
		run("over-2", "over", 300, small.Memory*90/100, "1g.5gb"),
	}
	on := map[string]string{}
	for _, r := range simRun(t, jobs, oneGPU, policy(t, "migpro+predict")).Runs {
		on[r.Job] = r.Profile
	}
	if on["fits-2"] != "1g.5gb" {
		t.Errorf("fits-2 ran on %s; want the 1g.5gb it names, which holds its workload's recorded peak", on["fits-2"])
	}
	if p, _ := m.Profile(on["over-2"]); p.Memory <= small.Memory {
		t.Errorf("over-2 ran on %s; want more memory than 1g.5gb, which its workload's recorded peak exceeds", on["over-2"])
	}
}
