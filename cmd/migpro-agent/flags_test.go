package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoubleDashFlags: the agent takes --name flags, like kubectl and
// NVIDIA's device plugin; a single-dash long flag is refused in one line
// that says so.
func TestDoubleDashFlags(t *testing.T) {
	err := run(context.Background(), []string{"-simulate", "a100-40gb"})
	var u usageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "two dashes: --simulate") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("-simulate: %v, want a one-line usage error naming --simulate", err)
	}
	if err := run(context.Background(), []string{"--simulate", "a100-40gb", "stray"}); !errors.As(err, &u) {
		t.Fatalf("a stray argument: %v, want a usage error", err)
	}
}

// TestHelp: --help lists the double-dash flags and speaks of the agent's
// own flags, not of the repository's make targets.
func TestHelp(t *testing.T) {
	var buf bytes.Buffer
	stdout = &buf
	defer func() { stdout = os.Stdout }()
	if err := run(context.Background(), []string{"--help"}); !errors.Is(err, errExit) {
		t.Fatalf("--help: %v", err)
	}
	help := buf.String()
	for _, want := range []string{"--simulate string", "--nvidia-cdi-hook-path", "--profiles", "--version"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if strings.Contains(help, "make ") {
		t.Errorf("help names a make target:\n%s", help)
	}
}

// TestBadPolicyInstallsNothing: --policy best fails before the simulated
// driver is installed or any state is written.
func TestBadPolicyInstallsNothing(t *testing.T) {
	dir := t.TempDir()
	err := run(context.Background(), []string{"--simulate", "a100-40gb", "--policy", "best", "--state-dir", dir,
		"--sim-root", filepath.Join(dir, "sim"), "--cdi-dir", filepath.Join(dir, "cdi"), "--socket", filepath.Join(dir, "agent.sock"),
		"--plugin-dir=", "--pod-resources=", "--metrics-addr=", "--telemetry-dir=off"})
	if err == nil || !strings.Contains(err.Error(), "--policy") || !strings.Contains(err.Error(), `"best"`) {
		t.Fatalf("--policy best: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--policy best left %d entries in the state directory (first %s)", len(entries), entries[0].Name())
	}
}
