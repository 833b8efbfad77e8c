package replay

import (
	"slices"
	"strings"
	"testing"
)

// A request counts in the start waits by the profile it asked for, not by
// the instance that served it: under a static layout of one whole-GPU
// instance a 1g.5gb request runs on the 7g.40gb and is a 1g start.
func TestStartWaitsCountTheProfileAskedFor(t *testing.T) {
	jobs := []Job{{ID: "small", Key: "s", FullRuntime: 100, Scaling: 1, Mem: Fixed(4 * GiB), Profile: "1g.5gb"}}
	r := simRun(t, jobs, oneGPU, policy(t, "static:all-full"))
	if len(r.Runs) != 1 || r.Runs[0].Profile != "7g.40gb" {
		t.Fatalf("runs %+v, want the 1g.5gb request on the layout's 7g.40gb", r.Runs)
	}
	if w, ok := r.StartWait("1g"); !ok || w.Jobs != 1 {
		t.Errorf("start waits %+v, want one 1g request", r.StartWaits)
	}
	if _, ok := r.StartWait("7g"); ok {
		t.Errorf("start waits %+v, want no 7g request", r.StartWaits)
	}
}

// migpro/exact is the agent serving pods that ask for a per-profile
// resource: every run gets the profile it asked for. migpro serves as the
// agent's local callers that take a larger instance, so the 3g.20gb placed
// at slot 0, where a 3g would leave a compute slice idle, runs on a
// 4g.20gb. Both are the agent's own decision, not simulator only.
func TestExactServesTheProfileAskedFor(t *testing.T) {
	jobs := []Job{
		{ID: "a", Key: "a", FullRuntime: 1000, Scaling: 1, Mem: Fixed(15 * GiB), Profile: "3g.20gb"},
		{ID: "b", Key: "b", Arrival: 10, FullRuntime: 1000, Scaling: 1, Mem: Fixed(15 * GiB), Profile: "3g.20gb"},
	}
	for name, want := range map[string]string{"migpro": "3g.20gb 4g.20gb", "migpro/exact": "3g.20gb 3g.20gb"} {
		pol := policy(t, name)
		if pol.SimulatorOnly() {
			t.Errorf("%s is labelled simulator only; the agent runs it", name)
		}
		r := simRun(t, jobs, oneGPU, pol)
		var got []string
		for _, run := range r.Runs {
			got = append(got, run.Profile)
		}
		slices.Sort(got)
		if strings.Join(got, " ") != want {
			t.Errorf("%s: runs on %v, want %s", name, got, want)
		}
	}
}
