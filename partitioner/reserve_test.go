package partitioner

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A reservation for the whole GPU turns other profiles away from the slots
// it holds; a backfill request may use them, and leaves the reservation
// standing for the request it holds room for.
func TestBackfillUsesTheReservedSlots(t *testing.T) {
	node := newSim(t, "a100-40gb")
	p := newPart(t, node)
	held, _ := mustAlloc(t, p, "3g.20gb", "runner")
	r, err := p.ReserveFor("7g.40gb")
	if err != nil {
		t.Fatal(err)
	}
	if r.GPU != 0 || r.Placement == nil || r.Placement.Start != 0 || r.Placement.Size != 8 {
		t.Fatalf("reservation %+v: want GPU 0, slots 0-7", r)
	}
	if _, err := p.Plan("1g.5gb"); !errors.Is(err, ErrMustWait) {
		t.Fatalf("plan 1g.5gb under the reservation: %v, want ErrMustWait", err)
	}
	if _, _, err := p.Allocate(context.Background(), "1g.5gb", "small"); !errors.Is(err, ErrMustWait) {
		t.Fatalf("allocate 1g.5gb under the reservation: %v, want ErrMustWait", err)
	}
	plan, err := p.PlanBackfill("1g.5gb")
	if err != nil || plan.GPU != 0 {
		t.Fatalf("plan backfill 1g.5gb: %+v, %v; want a plan on GPU 0", plan, err)
	}
	in, _, err := p.AllocateBackfill(context.Background(), "1g.5gb", nil, "small")
	if err != nil {
		t.Fatalf("backfill 1g.5gb: %v", err)
	}
	if in.Owner != "small" || in.State != InUse {
		t.Fatalf("backfilled instance %+v: want in use by small", in)
	}
	agreeWithDriver(t, p, node)
	if got, ok := p.Reserved(); !ok || got.Profile != "7g.40gb" {
		t.Fatalf("after the backfill the reservation is %+v, %v; want 7g.40gb still held", got, ok)
	}
	// The reservation still turns ordinary requests away.
	if _, _, err := p.Allocate(context.Background(), "1g.5gb", "other"); !errors.Is(err, ErrMustWait) {
		t.Fatalf("allocate 1g.5gb after the backfill: %v, want ErrMustWait", err)
	}
	// Once both runs end the reserved request fits.
	for _, u := range []string{held.UUID, in.UUID} {
		if _, err := p.Release(u); err != nil {
			t.Fatal(err)
		}
	}
	big, _ := mustAlloc(t, p, "7g.40gb", "big")
	if big.GPU != 0 || big.Placement.Start != 0 {
		t.Fatalf("7g.40gb at %+v", big)
	}
	agreeWithDriver(t, p, node)
}

// Without a reservation a backfill is an ordinary allocation, pin included.
func TestBackfillWithoutAReservationIsAllocate(t *testing.T) {
	p := newPart(t, newSim(t, "a100-40gb"))
	in, _, err := p.AllocateBackfill(context.Background(), "2g.10gb", &Pin{GPU: 0, Start: 4}, "x")
	if err != nil {
		t.Fatal(err)
	}
	if in.Placement.Start != 4 {
		t.Fatalf("pinned backfill at slot %d, want 4", in.Placement.Start)
	}
	if _, _, err := p.AllocateBackfill(context.Background(), "9g.80gb", nil, "x"); !errors.Is(err, ErrUnknownProfile) {
		t.Fatalf("unknown profile: %v, want ErrUnknownProfile", err)
	}
}

// Starving picks the waiter waiting longest past the limit, the lower key
// among equals, and none while every waiter is within it.
func TestStarvingPicksTheLongestWaiterPastTheLimit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ws := []Waiter{
		{Key: "b", Profile: "7g.40gb", Since: t0},
		{Key: "a", Profile: "1g.5gb", Since: t0},
		{Key: "c", Profile: "4g.20gb", Since: t0.Add(-time.Second)},
	}
	if w, ok := Starving(t0.Add(time.Minute), ws, 2*time.Minute); ok {
		t.Fatalf("after a minute: %+v starves, want none within 2 minutes", w)
	}
	if w, ok := Starving(t0.Add(3*time.Minute), ws, 2*time.Minute); !ok || w.Key != "c" {
		t.Fatalf("after 3 minutes: %+v %v, want c, waiting longest", w, ok)
	}
	if w, ok := Starving(t0.Add(3*time.Minute), ws[:2], 2*time.Minute); !ok || w.Key != "a" {
		t.Fatalf("equal waits: %+v %v, want the lower key a", w, ok)
	}
}

// ReserveFor holds the placement whose runs in the way were all handed
// over longest ago: runs of one workload last about as long as each other,
// so it drains first. The slots held used to decide first: GPU 1, with two
// old runs, lost to GPU 0 with one new run. A run handed over again is new.
func TestReserveForDrainsTheOldestRuns(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	p := newPart(t, newSim(t, "a100-40gb:2"), WithClock(func() time.Time { return now }))
	alloc := func(gpu, start int, owner string) Instance {
		t.Helper()
		in, _, err := p.AllocateAt(context.Background(), "1g.5gb", &Pin{GPU: gpu, Start: start}, owner)
		if err != nil {
			t.Fatalf("allocate 1g.5gb at GPU %d slot %d: %v", gpu, start, err)
		}
		return in
	}
	old := alloc(1, 6, "old-a")
	alloc(1, 5, "old-b")
	now = now.Add(time.Hour)
	alloc(0, 6, "new")
	r, err := p.ReserveFor("7g.40gb")
	if err != nil {
		t.Fatal(err)
	}
	if r.GPU != 1 || r.Placement == nil || r.Placement.Start != 0 {
		t.Fatalf("reservation %+v: want GPU 1, whose runs are an hour older", r)
	}
	// old-a ends and its idle instance is handed over again later: GPU 1's
	// newest run is now newer than GPU 0's.
	if err := p.Reserve(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Release(old.UUID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if again := alloc(1, 6, "again"); again.UUID != old.UUID {
		t.Fatalf("want old-a's idle instance reused, got %+v", again)
	}
	if r, err = p.ReserveFor("7g.40gb"); err != nil {
		t.Fatal(err)
	}
	if r.GPU != 0 {
		t.Fatalf("reservation %+v: want GPU 0 once GPU 1 holds the newest run", r)
	}
	// An empty GPU drains at once, whatever the ages.
	p2 := newPart(t, newSim(t, "a100-40gb:2"), WithClock(func() time.Time { return now }))
	if _, _, err := p2.AllocateAt(context.Background(), "1g.5gb", &Pin{GPU: 0, Start: 6}, "x"); err != nil {
		t.Fatal(err)
	}
	if r, err = p2.ReserveFor("7g.40gb"); err != nil || r.GPU != 1 {
		t.Fatalf("reservation %+v, %v: want the empty GPU 1", r, err)
	}
}

// After a restart the agent hands instances back to the holders its
// checkpoint names with the time each holding began (AssignSince), so a
// reservation still drains the oldest runs: a new partitioner over the
// same GPUs, GPU 1's run given back as an hour old and GPU 0's as now,
// holds GPU 1. Given back without their ages (Assign), the two tie and
// GPU 0, first in order, is held; a time after now counts from now.
func TestReserveForAfterRestartKeepsRunAges(t *testing.T) {
	now := time.Unix(2_000_000, 0)
	sim := newSim(t, "a100-40gb:2")
	first := newPart(t, sim, WithClock(func() time.Time { return now }))
	var uuids [2]string
	for g := range uuids {
		in, _, err := first.AllocateAt(context.Background(), "1g.5gb", &Pin{GPU: g, Start: 6}, fmt.Sprintf("pod-%d", g))
		if err != nil {
			t.Fatal(err)
		}
		uuids[g] = in.UUID
	}
	for _, c := range []struct {
		name  string
		since [2]time.Time
		want  int
	}{
		{"ages kept", [2]time.Time{now, now.Add(-time.Hour)}, 1},
		{"no ages", [2]time.Time{}, 0},
		{"a future age counts from now", [2]time.Time{now.Add(-time.Hour), now.Add(time.Hour)}, 0},
	} {
		p := newPart(t, sim, WithClock(func() time.Time { return now }))
		for g, u := range uuids {
			if _, err := p.AssignSince(u, fmt.Sprintf("pod-%d", g), c.since[g]); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		r, err := p.ReserveFor("7g.40gb")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.GPU != c.want {
			t.Errorf("%s: reservation on GPU %d, want GPU %d", c.name, r.GPU, c.want)
		}
	}
}
