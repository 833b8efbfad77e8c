package main

import (
	"os/exec"
	"strings"
	"testing"
)

// maxDeps bounds `go list -deps ./cmd/migctl`: 655 when migctl linked the
// agent, the containerd client and gonum/plot; 232 without them. The goal is
// under 250; doctor cdi-spec's import of cdi (NVIDIA's nvcdi and its
// dependencies) holds it at 279 for now, and this bound keeps it from
// growing further.
const maxDeps = 285

// TestMigctlStaysSmall lists migctl's dependencies, standard library
// included, and refuses more than maxDeps or any of the heavy ones that
// belong to migpro-lab.
func TestMigctlStaysSmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) >= maxDeps {
		t.Errorf("migctl has %d dependencies, want under %d", len(deps), maxDeps)
	}
	heavy := []string{"github.com/migpro/migpro/agent", "github.com/migpro/migpro/replay", "github.com/migpro/migpro/runner",
		"github.com/containerd/", "gonum.org/", "google.golang.org/grpc", "k8s.io/client-go"}
	for _, d := range deps {
		for _, h := range heavy {
			if d == h || strings.HasPrefix(d, h+"/") || (strings.HasSuffix(h, "/") && strings.HasPrefix(d, h)) {
				t.Errorf("migctl links %s", d)
			}
		}
	}
}
