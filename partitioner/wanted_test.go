package partitioner

import (
	"context"
	"testing"
	"time"
)

// idleBesideBusy lays out one A100 as traced in docs/replay-findings.md:
// 1g.5gb at slots 4 and 5 in use, an idle 1g.5gb at slot 6 and an idle
// 3g.20gb at slot 0. It returns a migpro partitioner over it.
func idleBesideBusy(t *testing.T) *Partitioner {
	t.Helper()
	node := newSim(t, "a100-40gb")
	ff := newPart(t, node, WithPolicy(FirstFit{}))
	var busy []Instance
	for _, c := range []struct {
		profile string
		start   int
		inUse   bool
	}{{"3g.20gb", 0, false}, {"1g.5gb", 4, true}, {"1g.5gb", 5, true}, {"1g.5gb", 6, false}} {
		in, _, err := ff.AllocateAt(context.Background(), c.profile, &Pin{0, c.start}, "lay")
		if err != nil {
			t.Fatal(err)
		}
		if c.inUse {
			busy = append(busy, in)
		} else if _, err := ff.Release(in.UUID); err != nil {
			t.Fatal(err)
		}
	}
	p := newPart(t, node)
	for _, in := range busy {
		if _, err := p.Assign(in.UUID, "busy"); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// A layout counts as filling the GPU only through instances someone asks
// for. Asked for 1g.5gb and 3g.20gb, never 1g.10gb, migpro reuses the idle
// 1g.5gb at slot 6, which keeps the lower half for a 3g.20gb, rather than
// destroy the idle 3g.20gb to make a 1g.5gb at slot 0: that keeps slot 6
// free for a 1g.10gb, the one small instance that reaches memory slot 7,
// and counting those layouts as full made slot 0 look cheaper.
func TestMigproDoesNotKeepRoomForAnUnwantedProfile(t *testing.T) {
	p := idleBesideBusy(t)
	p.ObservePending(map[string]int{"1g.5gb": 1, "3g.20gb": 2})
	in, plan := mustAlloc(t, p, "1g.5gb", "a")
	if plan.Reuse == nil || in.Placement.Start != 6 {
		t.Fatalf("1g.5gb: plan %s; want the idle one at slot 6 reused", plan)
	}
	p.ObservePending(map[string]int{"3g.20gb": 2})
	if in, plan := mustAlloc(t, p, "3g.20gb", "b"); in.Placement.Start != 0 || len(plan.Steps) != 0 {
		t.Fatalf("3g.20gb after it: at slot %d, plan %s; want the idle one at slot 0 reused", in.Placement.Start, plan)
	}
}

// A profile is wanted once the node has been asked for it, however long
// ago (a long trace's rare profiles come back), or while it waits; one never
// asked for is not.
func TestWantedIsWhatTheNodeWasAskedFor(t *testing.T) {
	var d mix
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if d.wants("1g.10gb") {
		t.Fatal("a profile never asked for is wanted")
	}
	d.observe("1g.10gb", t0)
	d.observe("1g.5gb", t0.Add(60*24*time.Hour)) // its recent count decays to nothing
	if !d.wants("1g.10gb") || !d.wants("1g.5gb") {
		t.Errorf("wanted 1g.10gb %v, 1g.5gb %v; want both", d.wants("1g.10gb"), d.wants("1g.5gb"))
	}
	if d.wants("3g.20gb") {
		t.Error("a profile never asked for is wanted")
	}
	d.setPending(map[string]int{"3g.20gb": 1})
	if !d.wants("3g.20gb") {
		t.Error("a waiting profile is not wanted")
	}
}

// Sequence's what-if requests are not requests: a profile never asked for
// is still not wanted after its sequence is worked out, so the choices made
// later are the ones the sequence listed (the DRA driver publishes them).
func TestSequenceLeavesWantedAlone(t *testing.T) {
	p := newPart(t, newSim(t, "a100-40gb:2"))
	mustAlloc(t, p, "2g.10gb", "a")
	if seq := p.Sequence("1g.5gb", 12); len(seq) == 0 {
		t.Fatal("empty sequence")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mix.wants("1g.5gb") {
		t.Error("1g.5gb is wanted after a what-if sequence of it")
	}
	if !p.mix.wants("2g.10gb") {
		t.Error("2g.10gb, served, is not wanted")
	}
}
