package partitioner

import (
	"context"
	"errors"
	"testing"
)

// On a mixed node a profile only the A100 offers waits while the A100 is
// full; AllocateHolding serves it on the H100's smallest instance that holds
// it (compute slices and the memory NVML reports), an idle one before a new
// one, and Allocate stays exact.
func TestAllocateHoldingServesOnALargerInstance(t *testing.T) {
	node := newSim(t, "a100-40gb,h100-80gb")
	p := newPart(t, node)
	ctx := context.Background()
	mustAlloc(t, p, "7g.40gb", "big") // the A100, full
	if _, _, err := p.Allocate(ctx, "3g.20gb", "x"); !errors.Is(err, ErrMustWait) {
		t.Fatalf("exact 3g.20gb on a full A100: %v, want must wait", err)
	}
	in, plan, err := p.AllocateHolding(ctx, "3g.20gb", nil, "x")
	if err != nil {
		t.Fatal(err)
	}
	if in.GPU != 1 || in.Profile != "3g.40gb" || plan.Asked != "3g.20gb" || plan.Profile != "3g.40gb" || len(plan.Steps) != 1 {
		t.Fatalf("got %s by %s (asked %q), want a new 3g.40gb on the H100", in, plan, plan.Asked)
	}
	agreeWithDriver(t, p, node)
	if _, err := p.Release(in.UUID); err != nil {
		t.Fatal(err)
	}
	// 2g.10gb: the H100's 2g.20gb is the smallest that holds it, but the
	// idle 3g.40gb is used before anything is made.
	in2, plan2, err := p.AllocateHolding(ctx, "2g.10gb", nil, "y")
	if err != nil || in2.UUID != in.UUID || plan2.Reuse == nil || plan2.Asked != "2g.10gb" {
		t.Fatalf("got %s by %s, %v: want the idle 3g.40gb reused", in2, plan2, err)
	}
	in3, _, err := p.AllocateHolding(ctx, "2g.10gb", nil, "z")
	if err != nil || in3.Profile != "2g.20gb" || in3.GPU != 1 {
		t.Fatalf("got %s, %v: want a new 2g.20gb on the H100", in3, err)
	}
	agreeWithDriver(t, p, node)
	// An A100 instance never holds an H100 profile of the same name size:
	// the A100's 7g.40gb reports less memory than the H100's 3g.40gb.
	p2 := newPart(t, newSim(t, "a100-40gb,h100-80gb"))
	mustAlloc(t, p2, "7g.80gb", "big")
	if pl, err := p2.PlanHolding("3g.40gb"); !errors.Is(err, ErrMustWait) {
		t.Fatalf("3g.40gb on a full H100: %s, %v, want must wait", pl, err)
	}
	// While the profile itself can be made, it is.
	in4, plan4, err := p2.AllocateHolding(ctx, "3g.20gb", nil, "x")
	if err != nil || in4.Profile != "3g.20gb" || in4.GPU != 0 || plan4.Asked != "" {
		t.Fatalf("got %s by %s, %v: want the 3g.20gb itself", in4, plan4, err)
	}
}
