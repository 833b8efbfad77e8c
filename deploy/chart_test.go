package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// helmBinary finds the helm built by `make e2e-deps-helm`, else one on PATH.
func helmBinary(t *testing.T) string {
	cache := os.Getenv("MIGPRO_E2E_CACHE")
	if cache == "" {
		cache = "/var/cache/migpro-e2e"
	}
	if p := filepath.Join(cache, "bin", "helm"); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	t.Fatal("helm not built: run `make e2e-deps-helm` (make test-unit does)")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestManifestsMatchChart renders the chart exactly as `make manifests` does
// (mk/manifests.mk) and requires deploy/kubernetes/ to hold the same files
// with the same bytes.
func TestManifestsMatchChart(t *testing.T) {
	helm := helmBinary(t)
	out := t.TempDir()
	cmd := exec.Command(helm, "template", "migpro", "helm/migpro", "--namespace", "migpro-system",
		"--set", "admission.certManager=false", "--set", "admission.generateCert=false", "--output-dir", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, b)
	}
	rendered, _ := filepath.Glob(filepath.Join(out, "migpro", "templates", "*.yaml"))
	committed, _ := filepath.Glob("kubernetes/*.yaml")
	names := func(paths []string) []string {
		var n []string
		for _, p := range paths {
			n = append(n, filepath.Base(p))
		}
		sort.Strings(n)
		return n
	}
	if a, b := names(rendered), names(committed); len(a) != len(b) || len(a) == 0 {
		t.Fatalf("chart renders %v, deploy/kubernetes/ holds %v: run `make manifests`", a, b)
	}
	for _, r := range rendered {
		want, _ := os.ReadFile(r)
		got, err := os.ReadFile(filepath.Join("kubernetes", filepath.Base(r)))
		if err != nil {
			t.Errorf("%v: run `make manifests`", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("deploy/kubernetes/%s differs from the chart: run `make manifests`", filepath.Base(r))
		}
	}
}
