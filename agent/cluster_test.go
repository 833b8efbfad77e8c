package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/migpro/migpro/demand"
	"github.com/migpro/migpro/partitioner"
)

func TestClusterProvisionerOnAnA100(t *testing.T) {
	ctx := context.Background()
	a := newEnv(t, "a100-40gb").start(t)
	p := newClusterProvisioner(a)
	fits := func(profile string, n int, keep demand.Reserved, want bool) {
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
	fits("1g.5gb", 1, demand.Reserved{"1g.5gb": 1}, true)
	fits("1g.5gb", 6, demand.Reserved{"1g.5gb": 1}, true)
	fits("1g.5gb", 7, demand.Reserved{"1g.5gb": 1}, false)
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
	fits("1g.5gb", 1, demand.Reserved{"1g.5gb": 7}, false)
	// A 3g.20gb needs three 1g.5gb destroyed (slots 4-6). With five of the
	// seven reserved that is refused and nothing changes...
	keep := demand.Reserved{"1g.5gb": 5}
	fits("3g.20gb", 1, keep, false)
	if err := p.Provision(ctx, "3g.20gb", keep); !errors.Is(err, partitioner.ErrMustWait) {
		t.Fatalf("provision 3g.20gb over reserved instances: %v, want ErrMustWait", err)
	}
	if n := p.IdleCount("1g.5gb"); n != 7 {
		t.Fatalf("idle 1g.5gb = %d after a refused provision, want 7", n)
	}
	// ...with four reserved it destroys three spare ones and makes it.
	keep = demand.Reserved{"1g.5gb": 4}
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

func TestClusterDemandConfig(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	e := newEnv(t, "a100-40gb")
	e.cfg.PluginDir = t.TempDir()
	e.cfg.NodeName = "node-a"
	a := e.start(t)
	if src, err := a.clusterDemand(); src != nil || err != nil {
		t.Fatalf("no kubeconfig and not in a pod: source %v, err %v; want off", src, err)
	}
	a.cfg.Kubeconfig = filepath.Join(t.TempDir(), "missing")
	if _, err := a.clusterDemand(); err == nil {
		t.Fatal("a missing kubeconfig is not an error")
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	a.cfg.Kubeconfig = kc
	if src, err := a.clusterDemand(); src == nil || err != nil {
		t.Fatalf("with a kubeconfig and a node name: source %v, err %v; want on", src, err)
	}
	a.cfg.NodeName = ""
	if src, err := a.clusterDemand(); src != nil || err != nil {
		t.Fatalf("without a node name: source %v, err %v; want off", src, err)
	}
	a.cfg.NodeName, a.cfg.PluginDir = "node-a", ""
	if src, err := a.clusterDemand(); src != nil || err != nil {
		t.Fatalf("without device plugins: source %v, err %v; want off", src, err)
	}
}
