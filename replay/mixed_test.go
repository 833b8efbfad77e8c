package replay

import (
	"strings"
	"testing"
)

const mixedNode = "a100-40gb:2,h100-80gb:1"

// The mixed node of issue 12: 3g.40gb only exists on the H100. migpro keeps
// the H100 for it and puts the 1g.10gb on an A100, so both 3g.40gb run at
// once; the jobs run on the GPUs that offer their profiles.
func TestMixedNodeKeepsTheOnlyGPUOfferingAProfile(t *testing.T) {
	var jobs []Job
	for i, p := range []string{"3g.40gb", "1g.10gb", "3g.40gb"} {
		jobs = append(jobs, Job{ID: p + "-" + string(rune('a'+i)), Arrival: float64(i), FullRuntime: 1000, Mem: Fixed(5 * GiB), Profile: p})
	}
	r := simRun(t, jobs, Config{Model: mixedNode, Check: true}, policy(t, "migpro"))
	if r.Waits != 0 {
		t.Fatalf("migpro: %d waits, want none (1g.10gb on an A100, both 3g.40gb on the H100)", r.Waits)
	}
	for _, run := range r.Runs {
		if strings.HasPrefix(run.Job, "3g.40gb") && run.GPU != 2 {
			t.Errorf("%s ran on GPU %d; only GPU 2 (the H100) offers 3g.40gb", run.Job, run.GPU)
		}
		if strings.HasPrefix(run.Job, "1g.10gb") && run.GPU == 2 {
			t.Errorf("1g.10gb took the H100")
		}
	}
}

// Every dynamic policy runs a generated online stream on mixed nodes under
// the invariant checks, and no wait is one re-placing idle instances fixes.
func TestMixedNodeOnlineStream(t *testing.T) {
	m, err := LoadModel(mixedNode)
	if err != nil {
		t.Fatal(err)
	}
	if m.GPUsPerNode() != 3 || m.Slices != 7 {
		t.Fatalf("%s: %d GPUs, %d slices", mixedNode, m.GPUsPerNode(), m.Slices)
	}
	jobs, err := Generate(MixSpec{Name: "online", Jobs: 300, Seed: 4, GPUs: 3}, m)
	if err != nil {
		t.Fatal(err)
	}
	var profiles = map[string]bool{}
	for _, j := range jobs {
		profiles[j.Profile] = true
	}
	if !profiles["7g.80gb"] && !profiles["3g.40gb"] && !profiles["4g.40gb"] {
		t.Fatalf("the stream asks only for profiles both models share: %v", profiles)
	}
	for _, name := range []string{"migpro", "first-fit", "reachability", "static"} {
		r := simRun(t, jobs, Config{Model: mixedNode, Check: true}, policy(t, name))
		if len(r.Completions) != len(jobs) {
			t.Fatalf("%s: %d of %d jobs completed", name, len(r.Completions), len(jobs))
		}
		if r.Replaceable != 0 {
			t.Errorf("%s: %d waits were fixable by re-placing idle instances", name, r.Replaceable)
		}
	}
}

func TestMixedNodeSpecErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"a100-40gb:2,a30-24gb:1": "same number",
		"a100-40gb:0":            "bad GPU count",
		"a100-40gb:2,nope:1":     "nope",
	} {
		if _, err := LoadModel(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", spec, err, want)
		}
	}
	if err := (Config{Model: mixedNode, GPUsPerNode: 8}).Validate(); err == nil || !strings.Contains(err.Error(), "has 3") {
		t.Errorf("8 GPUs per node on a 3-GPU mixed node: %v", err)
	}
}

// migpro serves, as the agent's local API does for a caller that accepts a
// larger instance (partitioner.AllocateHolding), a request whose profile only
// the full A100 offers on the H100's smallest instance holding it, and runs
// it at that instance's speed; first-fit, exact, waits for the A100.
func TestMixedNodeServesOnALargerInstance(t *testing.T) {
	jobs := []Job{
		{ID: "whole-a100", Arrival: 0, FullRuntime: 1000, Scaling: 1, Mem: Fixed(5 * GiB), Profile: "7g.40gb"},
		{ID: "small", Arrival: 1, FullRuntime: 70, Scaling: 1, Mem: Fixed(5 * GiB), Profile: "3g.20gb"},
	}
	node := "a100-40gb:1,h100-80gb:1"
	r := simRun(t, jobs, Config{Model: node, Check: true}, policy(t, "migpro"))
	var small RunRecord
	for _, run := range r.Runs {
		if run.Job == "small" {
			small = run
		}
	}
	if small.GPU != 1 || small.Profile != "3g.40gb" || small.Granted != 1 {
		t.Fatalf("migpro ran %+v, want the H100's 3g.40gb granted at arrival", small)
	}
	if got := small.Ended - small.Started; got < 160 || got > 170 {
		t.Fatalf("run took %.1f s, want 70·7/3 ≈ 163 on 3 slices", got)
	}
	if ff := simRun(t, jobs, Config{Model: node, Check: true}, policy(t, "first-fit")); ff.Waits == 0 {
		t.Fatalf("first-fit served the 3g.20gb without waiting for the A100")
	}
}
