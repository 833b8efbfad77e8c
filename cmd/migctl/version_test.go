package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionIsTheBuildVersion builds migctl as make does, with the version
// linked in, and runs `migctl version` in text and JSON.
func TestVersionIsTheBuildVersion(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "migctl")
	const v = "v0.0.0-test-7-gabcdef0"
	build := exec.Command("go", "build", "-ldflags", "-X github.com/migpro/migpro/internal/buildinfo.version="+v, "-o", exe, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(exe, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "migctl "+v+" ") {
		t.Fatalf("migctl version: %v, %q; want migctl %s", err, out, v)
	}
	cmd := exec.Command(exe, "version")
	cmd.Env = append(cmd.Environ(), "MIGPRO_OUTPUT=json")
	out, err = cmd.Output()
	var info struct{ Version string }
	if err != nil || json.Unmarshal(out, &info) != nil || info.Version != v {
		t.Fatalf("MIGPRO_OUTPUT=json migctl version: %v, %q; want JSON with version %s", err, out, v)
	}
}
