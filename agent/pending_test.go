package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
)

// Through the local API: a caller told to wait counts as pending demand; one
// that keeps waiting gets a GPU reserved (on a node of three GPUs, the
// fewest that reserve), which other profiles then leave alone even when it is
// empty, until the caller is served.
func TestLocalWaitersArePendingDemandAndGetAReservation(t *testing.T) {
	e := newEnv(t, "a100-40gb,a100-40gb,a100-40gb")
	e.cfg.ReserveAfter = time.Hour // --reserve-after 1h
	a := e.start(t)
	c := runAgent(t, a)
	ctx := context.Background()
	held := holdHalfOfEveryGPU(t, c, 3)
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "7g.40gb", Owner: "big"}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("7g.40gb with every GPU half used: %v, want must wait", err)
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
	a.pending.starveAfter = time.Nanosecond // it has waited long enough from now on
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
	a.pending.starveAfter = time.Hour // the callers after it have not starved
	a.pending.mu.Unlock()
	for _, owner := range []string{"e", "f"} {
		r, err := c.Alloc(ctx, client.AllocRequest{Profile: "3g.20gb", Owner: owner})
		if err != nil || r.GPU == g {
			t.Fatalf("3g.20gb for %s: %+v %v, want it beside a 4g, not on the reserved GPU %d", owner, r, err, g)
		}
	}
	if err := c.Free(ctx, held[g].CDIName); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: "d"}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("1g.5gb with only the reserved GPU free: %v, want must wait", err)
	}
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "7g.40gb", Owner: "big"})
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

// holdHalfOfEveryGPU puts one 4g.20gb on each of the node's n GPUs (owners
// h0, h1, ...) and returns them by GPU.
func holdHalfOfEveryGPU(t *testing.T, c *client.Client, n int) []client.AllocResponse {
	t.Helper()
	held := make([]client.AllocResponse, n)
	for i := range n {
		r, err := c.Alloc(context.Background(), client.AllocRequest{Profile: "4g.20gb", Owner: fmt.Sprintf("h%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		held[r.GPU] = r
	}
	for g, r := range held {
		if r.CDIName == "" {
			t.Fatalf("%d 4g.20gb should take one GPU each; GPU %d has none: %+v", n, g, held)
		}
	}
	return held
}

// Without --reserve-after (the default) a local caller gets no reservation
// however long it waits: it is counted as pending demand, nothing more.
func TestNoReservationByDefault(t *testing.T) {
	e := newEnv(t, "a100-40gb,a100-40gb,a100-40gb")
	a := e.start(t)
	c := runAgent(t, a)
	ctx := context.Background()
	holdHalfOfEveryGPU(t, c, 3)
	now := time.Now()
	a.pending.mu.Lock()
	a.pending.now = func() time.Time { return now }
	a.pending.mu.Unlock()
	for range 10 { // told to wait again every 50 s, for 7.5 minutes
		if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "7g.40gb", Owner: "big"}); !errors.Is(err, client.ErrConflict) {
			t.Fatalf("7g.40gb with every GPU half used: %v, want must wait", err)
		}
		a.pending.mu.Lock()
		now = now.Add(50 * time.Second)
		a.pending.mu.Unlock()
	}
	if r, ok := a.part.Reserved(); ok {
		t.Fatalf("reservation %+v without --reserve-after", r)
	}
	if got := a.PendingDemand(); got["7g.40gb"] != 1 {
		t.Fatalf("pending %v, want 7g.40gb x1", got)
	}
}

// On a node of fewer than partitioner.MinReserveGPUs GPUs a starving local
// caller gets no reservation: holding one of two GPUs for it would leave the
// queue half the node while that GPU drains (docs/replay-findings.md measures it).
func TestSmallNodeReservesForNoStarvingCaller(t *testing.T) {
	e := newEnv(t, "a100-40gb,a100-40gb")
	e.cfg.ReserveAfter = time.Nanosecond
	a := e.start(t)
	c := runAgent(t, a)
	ctx := context.Background()
	holdHalfOfEveryGPU(t, c, 2)
	for range 2 {
		if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "7g.40gb", Owner: "big"}); !errors.Is(err, client.ErrConflict) {
			t.Fatalf("7g.40gb with both GPUs half used: %v, want must wait", err)
		}
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Reserved != nil || st.Pending["7g.40gb"] != 1 {
		t.Fatalf("2-GPU node: reserved %+v pending %v, want no reservation and 7g.40gb x1 pending", st.Reserved, st.Pending)
	}
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "3g.20gb", Owner: "c"})
	if err != nil || r.CDIName == "" {
		t.Fatalf("3g.20gb beside a 4g on an unreserved node: %+v %v", r, err)
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
	e := newEnv(t, "a100-40gb,a100-40gb,a100-40gb")
	e.cfg.ReserveAfter = time.Nanosecond
	a := e.start(t)
	c := runAgent(t, a)
	ctx := context.Background()
	holdHalfOfEveryGPU(t, c, 3)
	now := time.Now()
	a.pending.mu.Lock()
	a.pending.now = func() time.Time { return now }
	a.pending.mu.Unlock()
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
