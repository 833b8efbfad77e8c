package partitioner

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// serveStream allocates each profile in turn (nothing released) and returns
// how many were served before the first had to wait, with their placements.
func serveStream(t *testing.T, spec string, policy Policy, stream []string) (int, []string) {
	t.Helper()
	node := newSim(t, spec)
	p := newPart(t, node, WithPolicy(policy))
	var where []string
	for i, prof := range stream {
		in, _, err := p.Allocate(context.Background(), prof, fmt.Sprint(i))
		if errors.Is(err, ErrMustWait) {
			return i, where
		}
		if err != nil {
			t.Fatal(err)
		}
		where = append(where, fmt.Sprintf("%s@gpu%d/%d", prof, in.GPU, in.Placement.Start))
	}
	agreeWithDriver(t, p, node)
	return len(stream), where
}

// The stream from issue 12: counting layouts alone puts the two 1g at the
// top (slots 6 and 5), which blocks the 3g at slot 4 and strands slot 7, so
// the fifth request waits. First-fit serves all five. Migpro with no
// history places the first 1g as reachability does (slot 6, which keeps
// the most layouts) and serves four; once the node knows what is asked for
// (the requests waiting, or the recent mix) it serves all five.
func TestMigproServesOneOneThreeOneOne(t *testing.T) {
	stream := []string{"1g.5gb", "1g.5gb", "3g.20gb", "1g.5gb", "1g.5gb"}
	for _, c := range []struct {
		policy Policy
		want   int
	}{{Migpro{}, 4}, {FirstFit{}, 5}, {Reachability{}, 4}} {
		got, where := serveStream(t, "a100-40gb", c.policy, stream)
		if got != c.want {
			t.Errorf("%s served %d of 5 (%v), want %d", c.policy.Name(), got, where, c.want)
		}
	}
	p := newPart(t, newSim(t, "a100-40gb"))
	p.ObservePending(map[string]int{"1g.5gb": 4, "3g.20gb": 1})
	for i, prof := range stream {
		if _, _, err := p.Allocate(context.Background(), prof, fmt.Sprint(i)); err != nil {
			t.Fatalf("migpro with the stream pending: request %d (%s): %v", i, prof, err)
		}
	}
}

// On a mixed node only the H100 offers 3g.40gb: the 1g.10gb must go to an
// A100 so the second 3g.40gb still fits.
func TestMigproKeepsProfilesOnlySomeGPUsOffer(t *testing.T) {
	stream := []string{"3g.40gb", "1g.10gb", "3g.40gb"}
	got, where := serveStream(t, "a100-40gb:2,h100-80gb:1", Migpro{}, stream)
	if got != 3 {
		t.Fatalf("migpro served %d of 3 (%v), want all", got, where)
	}
	if got, _ := serveStream(t, "a100-40gb:2,h100-80gb:1", Reachability{}, stream); got == 3 {
		t.Logf("reachability served all three too")
	}
}

// Defragmentation: idle instances are free space to migpro. A 4g.20gb
// (slots 0-3 only) is blocked by idle 1g instances at 0 and 2 while an
// in-use 3g sits at 4: migpro destroys exactly the idle ones in the way,
// never the in-use one, and the in-use instance is still there after.
func TestDefragmentationNeverTouchesInUse(t *testing.T) {
	node := newSim(t, "a100-40gb")
	p := newPart(t, node, WithPolicy(FirstFit{})) // lay the instances out by hand
	for _, pin := range []Pin{{0, 0}, {0, 2}} {
		in, _, err := p.AllocateAt(context.Background(), "1g.5gb", &pin, "tmp")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Release(in.UUID); err != nil {
			t.Fatal(err)
		}
	}
	busy, _, err := p.AllocateAt(context.Background(), "3g.20gb", &Pin{0, 4}, "busy")
	if err != nil {
		t.Fatal(err)
	}
	mp := newPart(t, node) // migpro, adopting the same GPU
	if _, err := mp.Assign(busy.UUID, "busy"); err != nil {
		t.Fatal(err)
	}
	in, plan, err := mp.Allocate(context.Background(), "4g.20gb", "new")
	if err != nil {
		t.Fatalf("4g.20gb: %v (plan %v)", err, plan)
	}
	destroyed := 0
	for _, s := range plan.Steps {
		if s.Kind == StepDestroy {
			destroyed++
			if s.GIID == busy.GIID {
				t.Fatalf("plan %v destroys the in-use instance", plan)
			}
		}
	}
	if destroyed != 2 || in.Placement.Start != 0 {
		t.Fatalf("plan %v: want the two idle 1g destroyed and the 4g at slot 0", plan)
	}
	if got, err := mp.Find(busy.UUID); err != nil || got.State != InUse {
		t.Fatalf("in-use instance after defragmentation: %+v, %v", got, err)
	}
	agreeWithDriver(t, mp, node)
	// With every instance in use, nothing is destroyed: it waits.
	if _, plan, err := mp.Allocate(context.Background(), "3g.20gb", "x"); !errors.Is(err, ErrMustWait) {
		t.Fatalf("3g.20gb with only in-use instances on the GPU: plan %v, err %v; want must-wait", plan, err)
	}
}
