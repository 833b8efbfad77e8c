package replay

import "testing"

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
