package replay

import (
	"fmt"
	"testing"
)

// placed is, per job, where its first run went: "GPU/profile@start".
func placed(r *Result) map[string]string {
	out := map[string]string{}
	for job, x := range firstRuns(r) {
		out[job] = fmt.Sprintf("%d/%s@%d", x.GPU, x.Profile, x.Start)
	}
	return out
}

// longJob asks for a profile by name and runs long enough to hold it while
// the later jobs of a case are placed.
func longJob(id string, at float64, profile string) Job {
	return Job{ID: id, Key: id, Arrival: at, FullRuntime: 10000, Scaling: 1, Mem: Fixed(GiB), Profile: profile}
}

// nvidia-dra takes devices in name order: the first GPU, the lowest free
// start; the next GPU only when the first has no room. Each instance is
// destroyed when its run ends, so a later request is placed afresh and
// every run costs a create and a destroy.
func TestNvidiaDRAPlacesFirstGPULowestStart(t *testing.T) {
	jobs := []Job{
		longJob("a", 0, "1g.5gb"), longJob("b", 1, "1g.5gb"), longJob("c", 2, "2g.10gb"),
		longJob("d", 3, "3g.20gb"), longJob("e", 4, "1g.5gb"),
		{ID: "short", Key: "short", Arrival: 5, FullRuntime: 10, Scaling: 1, Mem: Fixed(GiB), Profile: "1g.5gb"},
		longJob("after", 100, "1g.5gb"),
	}
	cfg := Config{Nodes: 1, GPUsPerNode: 2, NoNVMLCost: true, Check: true}
	r := simRun(t, jobs, cfg, policy(t, "nvidia-dra"))
	want := map[string]string{"a": "0/1g.5gb@0", "b": "0/1g.5gb@1", "c": "0/2g.10gb@2", "d": "0/3g.20gb@4",
		"e": "1/1g.5gb@0", "short": "1/1g.5gb@1", "after": "1/1g.5gb@1"}
	got := placed(r)
	for id, w := range want {
		if got[id] != w {
			t.Errorf("job %s at %s, want %s", id, got[id], w)
		}
	}
	if r.Reconfigs != 2*len(r.Runs) {
		t.Errorf("%d NVML steps for %d runs, want a create and a destroy each", r.Reconfigs, len(r.Runs))
	}
	// first-fit places alike but keeps the short run's instance and
	// reuses it: one create fewer, and nothing destroyed.
	ff := simRun(t, jobs, cfg, policy(t, "first-fit"))
	if g := placed(ff)["after"]; g != "1/1g.5gb@1" || ff.Reconfigs >= r.Reconfigs {
		t.Errorf("first-fit: after at %s with %d steps (nvidia-dra %d)", g, ff.Reconfigs, r.Reconfigs)
	}
}

// hami places 1g and 3g profiles from the top of the GPU, other profiles
// where the longest run of free memory slots is left, and picks the GPU
// whose best placement scores highest; instances end with their runs.
func TestHAMiScoresPlacements(t *testing.T) {
	jobs := []Job{
		// From the top: slot 6.
		longJob("one", 0, "1g.5gb"),
		// GPU 1 is empty: a 2g at 0 leaves 6 free slots in a row there,
		// the best on GPU 0 leaves 4.
		longJob("two", 1, "2g.10gb"),
		// GPU 0 can take it only at 0, GPU 1 only at 4; both leave a
		// longest free run of 2 and 4 legal placements: the lower GPU.
		longJob("three", 2, "3g.20gb"),
		// GPU 1's best 1g leaves a run of 5 (GPU 0's: 1), and a 1g goes
		// from the top there.
		longJob("four", 3, "1g.5gb"),
	}
	cfg := Config{Nodes: 1, GPUsPerNode: 2, NoNVMLCost: true, Check: true}
	r := simRun(t, jobs, cfg, policy(t, "hami"))
	got := placed(r)
	for id, w := range map[string]string{"one": "0/1g.5gb@6", "two": "1/2g.10gb@0", "three": "0/3g.20gb@0", "four": "1/1g.5gb@6"} {
		if got[id] != w {
			t.Errorf("job %s at %s, want %s", id, got[id], w)
		}
	}
	// first-fit puts the first 1g at slot 0, the two products' orders differ.
	if g := placed(simRun(t, jobs, cfg, policy(t, "first-fit")))["one"]; g != "0/1g.5gb@0" {
		t.Errorf("first-fit: one at %s, want 0/1g.5gb@0", g)
	}
	if r.Reconfigs != 2*len(r.Runs) {
		t.Errorf("%d NVML steps for %d runs, want a create and a destroy each", r.Reconfigs, len(r.Runs))
	}
}
