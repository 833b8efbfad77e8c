package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
)

// runAgent starts the agent's Run loop (local API, health, maintenance) and
// stops it at the end of the test.
func runAgent(t *testing.T, a *Agent) *client.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent run: %v", err)
		}
	})
	c := client.New(a.cfg.Socket)
	// The local API answers a moment before every part has started.
	waitFor(t, "local API, and the agent running", func() bool {
		_, err := c.Status(context.Background())
		return err == nil && a.running.Load()
	})
	return c
}

func TestLocalAPIAllocStatusFree(t *testing.T) {
	e := newEnv(t, "a100-40gb,h100-80gb")
	c := runAgent(t, e.start(t))
	ctx := context.Background()
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "3g.40gb", Owner: "job1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.GPU != 1 || r.CDIName == "" {
		t.Fatalf("3g.40gb only exists on the H100 (GPU 1): %+v", r)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.GPUs) != 2 || len(st.Instances) != 1 || st.Instances[0].Owner != "local:job1" || st.Instances[0].CDIName != r.CDIName {
		t.Fatalf("status %+v", st)
	}
	profiles, err := c.Profiles(ctx)
	if err != nil || len(profiles) == 0 || profiles[0] != "1g.5gb" || profiles[len(profiles)-1] != "7g.80gb" {
		t.Fatalf("profiles %v %v: want the union of both GPUs, smallest first", profiles, err)
	}
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "4g.40gb"}); err != nil {
		t.Fatalf("4g.40gb next to the 3g: %v", err)
	}
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.20gb"}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("full H100: %v, want a conflict (must wait)", err)
	}
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "nope"}); err == nil {
		t.Fatal("unknown profile accepted")
	}
	if err := c.Free(ctx, r.CDIName); err != nil {
		t.Fatal(err)
	}
	if err := c.Free(ctx, r.CDIName); err == nil {
		t.Fatal("double free accepted")
	}
}

func TestSecondAgentOnTheSameSocketIsRefused(t *testing.T) {
	e := newEnv(t, "a30-24gb")
	runAgent(t, e.start(t))
	b := e.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Run(ctx); err == nil {
		t.Fatal("a second agent ran on a socket already served")
	}
}
