package main

import (
	"os/exec"
	"strings"
	"testing"
)

// maxDeps bounds `go list -deps ./cmd/migctl`: 655 when migctl linked the
// agent, the containerd client and gonum/plot; 279 while `migctl doctor
// cdi-spec` linked cdi (NVIDIA's nvcdi and its dependencies), which is now
// `migpro-lab cdi-spec`; 247 since.
const maxDeps = 250

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
		"github.com/containerd/", "gonum.org/", "google.golang.org/grpc", "k8s.io/client-go",
		"github.com/migpro/migpro/cdi", "github.com/NVIDIA/nvidia-container-toolkit/"}
	for _, d := range deps {
		for _, h := range heavy {
			if d == h || strings.HasPrefix(d, h+"/") || (strings.HasSuffix(h, "/") && strings.HasPrefix(d, h)) {
				t.Errorf("migctl links %s", d)
			}
		}
	}
}
