package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
)

// Through the local API: a caller told to wait counts as pending demand; one
// that keeps waiting gets a GPU reserved, which other profiles then leave
// alone even when it is empty, until the caller is served.
func TestLocalWaitersArePendingDemandAndGetAReservation(t *testing.T) {
	e := newEnv(t, "a100-40gb,a100-40gb")
	a := e.start(t)
	c := runAgent(t, a)
	ctx := context.Background()
	var held [2]client.AllocResponse
	for _, owner := range []string{"a", "b"} {
		r, err := c.Alloc(ctx, client.AllocRequest{Profile: "4g.20gb", Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		held[r.GPU] = r
	}
	if held[0].CDIName == "" || held[1].CDIName == "" {
		t.Fatalf("two 4g.20gb should take one GPU each: %+v", held)
	}
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "7g.40gb", Owner: "big"}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("7g.40gb with both GPUs half used: %v, want must wait", err)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Pending) != 1 || st.Pending["7g.40gb"] != 1 || st.Reserved != nil {
		t.Fatalf("status pending %v reserved %v: want 7g.40gb x1 and no reservation yet", st.Pending, st.Reserved)
	}
	if w := a.part.Mix(); w["7g.40gb"] <= w["1g.5gb"] {
		t.Fatalf("partitioner mix %v: the waiting 7g.40gb should weigh more than an unasked 1g.5gb", w)
	}

	a.pending.mu.Lock()
	a.pending.starveAfter = 0 // it has waited long enough from now on
	a.pending.mu.Unlock()
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "7g.40gb", Owner: "big"}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("7g.40gb again: %v, want must wait", err)
	}
	if st, err = c.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Reserved == nil || st.Reserved.Profile != "7g.40gb" {
		t.Fatalf("reserved %+v: want a GPU held for 7g.40gb", st.Reserved)
	}
	g := st.Reserved.GPU
	a.pending.mu.Lock()
	a.pending.starveAfter = defaultStarveAfter // the callers after it have not starved
	a.pending.mu.Unlock()
	other := 1 - g
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "3g.20gb", Owner: "c"})
	if err != nil || r.GPU != other {
		t.Fatalf("3g.20gb: %+v %v, want it on GPU %d, not the reserved GPU %d", r, err, other, g)
	}
	if err := c.Free(ctx, held[g].CDIName); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: "d"}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("1g.5gb with only the reserved GPU free: %v, want must wait", err)
	}
	r, err = c.Alloc(ctx, client.AllocRequest{Profile: "7g.40gb", Owner: "big"})
	if err != nil || r.GPU != g {
		t.Fatalf("7g.40gb once its GPU drained: %+v %v, want it on GPU %d", r, err, g)
	}
	if st, err = c.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Reserved != nil || len(st.Pending) != 1 || st.Pending["1g.5gb"] != 1 {
		t.Fatalf("after serving the 7g: reserved %v pending %v, want none and 1g.5gb x1", st.Reserved, st.Pending)
	}
}

// The cluster demand source's report reaches the partitioner's weights.
func TestClusterPendingDemandReachesThePartitioner(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	a := e.start(t)
	before := a.part.Mix()["3g.20gb"]
	a.ClusterProvisioner().ObservePending(map[string]int{"3g.20gb": 2})
	if got := a.PendingDemand(); got["3g.20gb"] != 2 {
		t.Fatalf("pending %v, want 3g.20gb x2", got)
	}
	if after := a.part.Mix()["3g.20gb"]; after <= before {
		t.Fatalf("3g.20gb weight %v -> %v: pending pods should raise it", before, after)
	}
	a.ClusterProvisioner().ObservePending(nil)
	if got := a.PendingDemand(); len(got) != 0 {
		t.Fatalf("pending %v after the source reported nothing waits", got)
	}
	if after := a.part.Mix()["3g.20gb"]; after != before {
		t.Fatalf("3g.20gb weight %v, want %v again", after, before)
	}
}

// A local caller that stops asking stops counting as pending after
// localWaitTTL, and its reservation goes with it at the next maintenance
// round, even if nothing else happens on the node.
func TestQuietLocalWaiterLosesItsReservation(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	a := e.start(t)
	c := runAgent(t, a)
	ctx := context.Background()
	now := time.Now()
	a.pending.mu.Lock()
	a.pending.now = func() time.Time { return now }
	a.pending.starveAfter = 0
	a.pending.mu.Unlock()
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "4g.20gb", Owner: "a"}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // told to wait twice, a second apart: the second time it has starved
		if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "7g.40gb", Owner: "big"}); !errors.Is(err, client.ErrConflict) {
			t.Fatalf("7g.40gb next to a 4g in use: %v, want must wait", err)
		}
		a.pending.mu.Lock()
		now = now.Add(time.Second)
		a.pending.mu.Unlock()
	}
	if r, ok := a.part.Reserved(); !ok || r.Profile != "7g.40gb" {
		t.Fatalf("reservation %+v %v, want one for 7g.40gb", r, ok)
	}
	a.pending.mu.Lock()
	now = now.Add(localWaitTTL + time.Second)
	a.pending.mu.Unlock()
	a.Maintain(ctx)
	if _, ok := a.part.Reserved(); ok {
		t.Fatal("the reservation outlived its quiet caller")
	}
	if got := a.PendingDemand(); len(got) != 0 {
		t.Fatalf("pending %v, want nothing once the caller went quiet", got)
	}
}
