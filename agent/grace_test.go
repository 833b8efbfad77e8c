package agent

import (
	"context"
	"testing"
	"time"

	"github.com/migpro/migpro/partitioner"
)

// An instance the kubelet was just allocated is InUse before the
// checkpoint names its holder (allocateCheck assigns, then persists). Use
// tracking that runs in between, while PodResources does not list the
// allocation yet, must give it the grace period too: releasing it would
// hand a running pod's instance to the next pod. (Seen in e2e under load:
// "pod gone: instance back to idle" 9 s after a 30 s grace began.)
func TestUnpersistedKubeletAllocationKeepsItsGrace(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.WarmPool = map[string]int{"1g.5gb": 1}
	e.cfg.AssignGrace = time.Hour
	a := e.start(t)
	a.Maintain(context.Background())
	devs := a.inv.Devices("1g.5gb")
	if len(devs) != 1 {
		t.Fatalf("warm pool advertised %d 1g.5gb, want 1", len(devs))
	}
	id := devs[0].ID
	// allocateCheck's first half: assigned, not yet checkpointed.
	if _, err := a.part.Assign(id, ownerKubelet); err != nil {
		t.Fatal(err)
	}
	a.Maintain(context.Background())
	if in, _ := a.part.Find(id); in.State != partitioner.InUse {
		t.Fatalf("kubelet allocation within its grace: %+v, want in use", in)
	}
	// Checkpointed, its grace runs from then; once past it, unlisted, it
	// goes back to idle.
	if err := a.persist(); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	h := a.holders[id]
	h.Since = time.Now().Add(-2 * time.Hour)
	a.holders[id] = h
	a.mu.Unlock()
	a.Maintain(context.Background())
	if in, _ := a.part.Find(id); in.State != partitioner.Idle {
		t.Fatalf("kubelet allocation past its grace, not listed: %+v, want idle", in)
	}
}
