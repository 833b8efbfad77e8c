package main

import (
	"fmt"
	"testing"
)

// Issue 12's mixed-node case through the CLI: only the H100 offers
// 3g.40gb, so migpro (the default) puts the 1g.10gb on an A100 and serves
// both 3g.40gb; the plain reachability count puts it on the H100 and the
// second 3g.40gb waits.
func TestPlanMigproKeepsTheOnlyGPUOfferingAProfile(t *testing.T) {
	args := []string{"--simulate", "a100-40gb:2,h100-80gb:1", "3g.40gb", "1g.10gb", "3g.40gb"}
	res := runPlanJSON(t, args...)
	if len(res.Waiting) != 0 {
		t.Fatalf("migpro: waiting %v, want every request served", res.Waiting)
	}
	for _, in := range res.Instances {
		if in.Profile == "1g.10gb" && in.GPU == 2 {
			t.Fatalf("migpro put the 1g.10gb on the H100: %+v", in)
		}
	}
	reach := runPlanJSON(t, append([]string{"--policy", "reachability"}, args...)...)
	if fmt.Sprint(reach.Waiting) != "[3]" {
		t.Fatalf("reachability: waiting %v, want [3] (the case issue 12 reports)", reach.Waiting)
	}
}
