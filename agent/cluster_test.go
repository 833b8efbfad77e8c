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
	p := clusterProvisioner{a}
	if !p.CanFit("1g.5gb", nil) {
		t.Fatal("an empty A100 cannot fit a 1g.5gb")
	}
	for i := range 7 {
		if err := p.Provision(ctx, "1g.5gb", nil); err != nil {
			t.Fatalf("provision 1g.5gb #%d: %v", i+1, err)
		}
	}
	if n := p.IdleCount("1g.5gb"); n != 7 {
		t.Fatalf("idle 1g.5gb = %d, want 7", n)
	}
	// All seven reserved: no spare one, and no room for another.
	if p.CanFit("1g.5gb", demand.Reserved{"1g.5gb": 7}) {
		t.Fatal("CanFit with every idle 1g.5gb reserved on a full GPU")
	}
	// A 3g.20gb needs three 1g.5gb destroyed (slots 4-6). With five of the
	// seven reserved that is refused and nothing changes...
	keep := demand.Reserved{"1g.5gb": 5}
	if p.CanFit("3g.20gb", keep) {
		t.Fatal("CanFit 3g.20gb although making room would destroy reserved instances")
	}
	if err := p.Provision(ctx, "3g.20gb", keep); !errors.Is(err, partitioner.ErrMustWait) {
		t.Fatalf("provision 3g.20gb over reserved instances: %v, want ErrMustWait", err)
	}
	if n := p.IdleCount("1g.5gb"); n != 7 {
		t.Fatalf("idle 1g.5gb = %d after a refused provision, want 7", n)
	}
	// ...with four reserved it destroys three spare ones and makes it.
	keep = demand.Reserved{"1g.5gb": 4}
	if !p.CanFit("3g.20gb", keep) {
		t.Fatal("CanFit 3g.20gb with three spare 1g.5gb")
	}
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
