package partitioner

import "testing"

// With no demand to weigh, the default places as reachability does: the
// first 1g.5gb on an empty A100 at slot 6 (33 of the 78 layouts stay
// reachable, against 21 at slot 0). Once a request has been served, demand
// weighting decides.
func TestMigproWithoutDemandPlacesAsReachability(t *testing.T) {
	p := newPart(t, newSim(t, "a100-40gb:1"))
	in, plan := mustAlloc(t, p, "1g.5gb", "a")
	if in.Placement.Start != 6 {
		t.Fatalf("first 1g.5gb at slot %d, want 6 (plan %s)", in.Placement.Start, plan)
	}
	if plan.Reachable != 33 {
		t.Errorf("layouts reachable after the first 1g.5gb: %d, want 33", plan.Reachable)
	}
	// The second request has the first to weigh: demand decides from here.
	if w := p.Mix()["1g.5gb"]; w <= 0.15 {
		t.Errorf("1g.5gb weight %.2f after serving one, want above the prior", w)
	}
}

// Pending demand is demand: with a 4g.20gb waiting, the first 1g.5gb keeps
// clear of the 4g's slots, which the plain count does not.
func TestMigproWeighsPendingBeforeAnyServedRequest(t *testing.T) {
	p := newPart(t, newSim(t, "a100-40gb:1"))
	p.ObservePending(map[string]int{"4g.20gb": 1})
	in, _ := mustAlloc(t, p, "1g.5gb", "a")
	if in.Placement.Start < 4 {
		t.Fatalf("1g.5gb at slot %d with a 4g.20gb waiting: it takes the 4g's slots", in.Placement.Start)
	}
}
