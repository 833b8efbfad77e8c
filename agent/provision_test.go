package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/migpro/migpro/partitioner"
)

func TestClusterProvisionerOnAnA100(t *testing.T) {
	ctx := context.Background()
	a := newEnv(t, "a100-40gb").start(t)
	p := a.ClusterProvisioner()
	fits := func(profile string, n int, keep map[string]int, want bool) {
		t.Helper()
		if got := p.CanFit(profile, n, keep); got != want {
			t.Fatalf("CanFit(%s, %d, %v) = %v, want %v (instances %v)", profile, n, keep, got, want, a.part.Instances())
		}
	}
	// An empty A100 holds seven 1g.5gb or two 3g.20gb.
	fits("1g.5gb", 7, nil, true)
	fits("1g.5gb", 8, nil, false)
	fits("3g.20gb", 2, nil, true)
	fits("3g.20gb", 3, nil, false)
	if err := p.Provision(ctx, "1g.5gb", nil); err != nil {
		t.Fatal(err)
	}
	// One idle 1g.5gb, reserved for a claim: another pod's 1g.5gb still fits
	// in free space (Plan alone would only offer to reuse the reserved one).
	fits("1g.5gb", 1, map[string]int{"1g.5gb": 1}, true)
	fits("1g.5gb", 6, map[string]int{"1g.5gb": 1}, true)
	fits("1g.5gb", 7, map[string]int{"1g.5gb": 1}, false)
	fits("1g.5gb", 7, nil, true) // the idle one, unreserved, counts
	// An unhealthy idle instance covers no pod.
	first := a.part.Instances()[0]
	a.mu.Lock()
	a.unhealthy[first.UUID] = true
	a.mu.Unlock()
	if n := p.IdleCount("1g.5gb"); n != 0 {
		t.Fatalf("idle count %d with the only instance unhealthy, want 0", n)
	}
	a.mu.Lock()
	delete(a.unhealthy, first.UUID)
	a.mu.Unlock()
	for i := range 6 {
		if err := p.Provision(ctx, "1g.5gb", nil); err != nil {
			t.Fatalf("provision 1g.5gb #%d: %v", i+2, err)
		}
	}
	if n := p.IdleCount("1g.5gb"); n != 7 {
		t.Fatalf("idle 1g.5gb = %d, want 7", n)
	}
	// All seven reserved: no spare one, and no room for another.
	fits("1g.5gb", 1, map[string]int{"1g.5gb": 7}, false)
	// A 3g.20gb needs three 1g.5gb destroyed (slots 4-6). With five of the
	// seven reserved that is refused and nothing changes...
	keep := map[string]int{"1g.5gb": 5}
	fits("3g.20gb", 1, keep, false)
	if err := p.Provision(ctx, "3g.20gb", keep); !errors.Is(err, partitioner.ErrMustWait) {
		t.Fatalf("provision 3g.20gb over reserved instances: %v, want ErrMustWait", err)
	}
	if n := p.IdleCount("1g.5gb"); n != 7 {
		t.Fatalf("idle 1g.5gb = %d after a refused provision, want 7", n)
	}
	// ...with four reserved it destroys three spare ones and makes it.
	keep = map[string]int{"1g.5gb": 4}
	fits("3g.20gb", 1, keep, true)
	fits("3g.20gb", 2, keep, false)
	if err := p.Provision(ctx, "3g.20gb", keep); err != nil {
		t.Fatalf("provision 3g.20gb: %v", err)
	}
	if p.IdleCount("3g.20gb") != 1 || p.IdleCount("1g.5gb") != 4 {
		t.Fatalf("idle 3g.20gb %d, 1g.5gb %d; want 1 and 4", p.IdleCount("3g.20gb"), p.IdleCount("1g.5gb"))
	}
	if got := specFiles(t, a.cfg.CDISpecDir); len(got) != 5 {
		t.Fatalf("%d CDI specs, want 5 (one per instance)", len(got))
	}
}
