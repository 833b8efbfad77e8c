package partitioner

import (
	"context"
	"testing"
	"time"
)

// Pending demand moves a placement: with 4g.20gb requests waiting (a
// 4g.20gb fits only at slots 0-3) a 1g.5gb on an empty A100 keeps clear of
// them, so the 4g.20gb is served next to it. With nothing waiting and no
// history, migpro places as reachability does (slot 6), which keeps the 4g
// too; weighing every profile alike used to put the 1g inside the 4g's slots.
func TestPendingDemandKeepsRoomForWaitingProfile(t *testing.T) {
	for _, pending := range []map[string]int{nil, {"4g.20gb": 2}} {
		p := newPart(t, newSim(t, "a100-40gb"))
		p.ObservePending(pending)
		one, _ := mustAlloc(t, p, "1g.5gb", "small")
		_, _, err := p.Allocate(context.Background(), "4g.20gb", "large")
		if err != nil {
			t.Errorf("pending %v: 1g.5gb at slot %d, then 4g.20gb: %v", pending, one.Placement.Start, err)
		}
		if one.Placement.Start < 4 {
			t.Errorf("pending %v: 1g.5gb at slot %d, inside the only 4g placement", pending, one.Placement.Start)
		}
	}
}

// The recent mix counts too: after a run of 4g.20gb requests (served and
// released), a 1g.5gb keeps clear of slots 0-3 on an empty A100.
func TestRecentMixKeepsRoomForServedProfile(t *testing.T) {
	p := newPart(t, newSim(t, "a100-40gb"))
	for i := 0; i < 6; i++ {
		in, _ := mustAlloc(t, p, "4g.20gb", "l")
		if _, err := p.Release(in.UUID); err != nil {
			t.Fatal(err)
		}
	}
	one, _ := mustAlloc(t, p, "1g.5gb", "small")
	if one.Placement.Start < 4 {
		t.Errorf("after six 4g.20gb requests the 1g.5gb went to slot %d, inside the only 4g placement", one.Placement.Start)
	}
	if _, _, err := p.Allocate(context.Background(), "4g.20gb", "large"); err != nil {
		t.Errorf("4g.20gb after the 1g.5gb: %v", err)
	}
}

// Re-placing: an idle 1g.5gb sits at slot 0, inside the only placement of
// a waiting 4g.20gb. Reusing it where it is (what a policy that keeps idle
// instances in place does) would block the 4g; migpro creates the new 1g
// elsewhere and destroys the idle one when the 4g comes.
func TestMigproReplacesIdleInstanceInTheWay(t *testing.T) {
	node := newSim(t, "a100-40gb")
	ff := newPart(t, node, WithPolicy(FirstFit{}))
	in, _, err := ff.AllocateAt(context.Background(), "1g.5gb", &Pin{0, 0}, "tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ff.Release(in.UUID); err != nil {
		t.Fatal(err)
	}
	p := newPart(t, node) // migpro adopts the idle 1g at slot 0
	p.ObservePending(map[string]int{"4g.20gb": 1})
	one, plan := mustAlloc(t, p, "1g.5gb", "small")
	if one.Placement.Start < 4 {
		t.Fatalf("1g.5gb: %v, at slot %d; want it placed clear of slots 0-3", plan, one.Placement.Start)
	}
	big, plan, err := p.Allocate(context.Background(), "4g.20gb", "large")
	if err != nil || big.Placement.Start != 0 {
		t.Fatalf("4g.20gb: %v, %v; want it at slot 0", plan, err)
	}
	agreeWithDriver(t, p, node)
}

// First-fit reuses by its own rule, the first idle instance of the profile
// (lowest GPU, then lowest slot), not the reachability rule (which would
// take the one keeping more layouts reachable).
func TestFirstFitReusesTheFirstIdleInstance(t *testing.T) {
	for _, c := range []struct {
		pins []Pin
		want Pin
	}{
		{[]Pin{{0, 6}, {0, 0}}, Pin{0, 0}},
		{[]Pin{{1, 0}, {0, 6}}, Pin{0, 6}},
	} {
		p := newPart(t, newSim(t, "a100-40gb:2"), WithPolicy(FirstFit{}))
		for _, pin := range c.pins {
			in, _, err := p.AllocateAt(context.Background(), "1g.5gb", &pin, "tmp")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Release(in.UUID); err != nil {
				t.Fatal(err)
			}
		}
		in, plan := mustAlloc(t, p, "1g.5gb", "x")
		if plan.Reuse == nil || in.GPU != c.want.GPU || in.Placement.Start != c.want.Start {
			t.Errorf("idle at %v: first-fit chose %v (GPU %d slot %d), want reuse at %v", c.pins, plan, in.GPU, in.Placement.Start, c.want)
		}
	}
}

// The recent mix decays over time, not per request: four 4g.20gb requests
// then one 1g.5gb a second later leave the 4g weighing more; the same with
// the 1g four hours later (eight half-lives) leave the 1g weighing more.
func TestRecentMixDecaysOverTime(t *testing.T) {
	for _, c := range []struct {
		gap     time.Duration
		heavier string
	}{{time.Second, "4g.20gb"}, {4 * time.Hour, "1g.5gb"}} {
		now := time.Unix(1000, 0)
		p := newPart(t, newSim(t, "a100-40gb"), WithClock(func() time.Time { return now }))
		for i := 0; i < 4; i++ {
			in, _ := mustAlloc(t, p, "4g.20gb", "l")
			if _, err := p.Release(in.UUID); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(c.gap)
		mustAlloc(t, p, "1g.5gb", "s")
		d := p.Mix()
		other := "1g.5gb"
		if c.heavier == other {
			other = "4g.20gb"
		}
		if d[c.heavier] <= d[other] {
			t.Errorf("1g %v after four 4g: weights %v, want %s above %s", c.gap, d, c.heavier, other)
		}
	}
}
