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
	// While the profile itself can be made, it is, in its own memory slots
	// on the A100 (at slot 0 as the wider 4g.20gb: TestAllocateHoldingWidensInPlace).
	in4, plan4, err := p2.AllocateHolding(ctx, "3g.20gb", nil, "x")
	if err != nil || in4.GPU != 0 || plan4.Asked != "" && (in4.Profile != "4g.20gb" || in4.Placement.Start != 0) ||
		plan4.Asked == "" && in4.Profile != "3g.20gb" {
		t.Fatalf("got %s by %s, %v: want the 3g.20gb itself on the A100", in4, plan4, err)
	}
}

// A 3g.20gb at slot 0 of an A100 takes memory slots 0-3 and leaves compute
// slice 3 with no memory slot. A caller that takes any instance holding its
// profile gets the 4g.20gb there instead (same memory and memory slots, the
// slice that would idle), and later the idle 4g.20gb is reused rather than
// destroyed to make a 3g.20gb in its place; an exact request keeps its
// profile, and a 3g.20gb at slot 4 strands nothing and is not widened.
func TestAllocateHoldingWidensInPlace(t *testing.T) {
	ctx := context.Background()
	node := newSim(t, "a100-40gb")
	p := newPart(t, node)
	for _, pin := range []struct {
		profile string
		start   int
	}{{"2g.10gb", 4}, {"1g.5gb", 6}} {
		if _, _, err := p.AllocateAt(ctx, pin.profile, &Pin{GPU: 0, Start: pin.start}, "upper"); err != nil {
			t.Fatal(err)
		}
	}
	if pl, err := p.Plan("3g.20gb"); err != nil || pl.Profile != "3g.20gb" || pl.Steps[len(pl.Steps)-1].Placement.Start != 0 {
		t.Fatalf("exact plan %s, %v: want a 3g.20gb at slot 0", pl, err)
	}
	in, plan, err := p.AllocateHolding(ctx, "3g.20gb", nil, "x")
	if err != nil || in.Profile != "4g.20gb" || in.Placement.Start != 0 || plan.Asked != "3g.20gb" || len(plan.Steps) != 1 {
		t.Fatalf("got %s by %s (asked %q), %v: want a new 4g.20gb at slot 0 for the 3g.20gb", in, plan, plan.Asked, err)
	}
	agreeWithDriver(t, p, node)
	if _, err := p.Release(in.UUID); err != nil {
		t.Fatal(err)
	}
	again, plan2, err := p.AllocateHolding(ctx, "3g.20gb", nil, "y")
	if err != nil || again.UUID != in.UUID || plan2.Reuse == nil || plan2.Asked != "3g.20gb" || len(plan2.Steps) != 0 {
		t.Fatalf("got %s by %s, %v: want the idle 4g.20gb reused, not destroyed for a 3g.20gb", again, plan2, err)
	}
	if _, err := p.Release(again.UUID); err != nil {
		t.Fatal(err)
	}
	exact, _, err := p.Allocate(ctx, "3g.20gb", "z")
	if err != nil || exact.Profile != "3g.20gb" || exact.Placement.Start != 0 {
		t.Fatalf("exact request got %s, %v: want its own 3g.20gb at slot 0", exact, err)
	}
	agreeWithDriver(t, p, node)

	// At slot 4 a 3g.20gb takes slices 4-6 and memory slots 4-7: no slice
	// idles, and there is no wider profile there.
	p2 := newPart(t, newSim(t, "a100-40gb"))
	if _, _, err := p2.AllocateAt(ctx, "2g.10gb", &Pin{GPU: 0, Start: 0}, "lower"); err != nil {
		t.Fatal(err)
	}
	in3, plan3, err := p2.AllocateHolding(ctx, "3g.20gb", nil, "x")
	if err != nil || in3.Profile != "3g.20gb" || in3.Placement.Start != 4 || plan3.Asked != "" {
		t.Fatalf("got %s by %s, %v: want the 3g.20gb itself at slot 4", in3, plan3, err)
	}
}
