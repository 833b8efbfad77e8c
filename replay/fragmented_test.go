package replay

import (
	"fmt"
	"slices"
	"testing"
)

// A 3g.20gb at slot 0 takes memory slots 0-3 for three compute slices:
// first-fit puts it there, a 2g.10gb at slot 4 and a 1g.5gb at slot 6, and
// the GPU holds six of its seven slices with slot 7 free. A second 1g.5gb
// then has a slice and a slot but no legal placement: a fragmentation wait,
// recorded with the instances in the way.
func TestFragmentedWaitNamesTheInstancesInTheWay(t *testing.T) {
	var jobs []Job
	for i, p := range []string{"3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"} {
		jobs = append(jobs, Job{ID: fmt.Sprintf("j%d-%s", i, p), Arrival: float64(i), FullRuntime: 1000, Mem: Fixed(2 * GiB), Profile: p})
	}
	r := simRun(t, jobs, oneGPU, policy(t, "first-fit"))
	if r.Fragmented != 1 || len(r.FragmentedWaits) != 1 {
		t.Fatalf("fragmentation waits: %d counted, %d recorded (%+v); want 1", r.Fragmented, len(r.FragmentedWaits), r.FragmentedWaits)
	}
	w := r.FragmentedWaits[0]
	want := []string{"1g.5gb@6", "2g.10gb@4", "3g.20gb@0"}
	if w.Job != jobs[3].ID || w.Profile != "1g.5gb" || w.Time != 3 || len(w.GPUs) != 1 || w.GPUs[0].GPU != 0 || !slices.Equal(w.GPUs[0].Instances, want) {
		t.Errorf("recorded %+v; want %s (1g.5gb) at 3 s, GPU 0 holding %v", w, jobs[3].ID, want)
	}
}
