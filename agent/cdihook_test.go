package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ResolveCDIHook says in one line what is missing and what to do, quietly
// under the simulated driver, and nothing when the hooks are off on purpose
// or the hook is there.
func TestResolveCDIHook(t *testing.T) {
	dir := t.TempDir()
	hook := filepath.Join(dir, "nvidia-cdi-hook")
	missing := ResolveCDIHook(Config{NVIDIACDIHookPath: hook})
	if missing.Use || !strings.Contains(missing.Message, "nvidia-container-toolkit") || !strings.Contains(missing.Message, "--nvidia-cdi-hook-path") ||
		strings.Contains(missing.Message, "\n") {
		t.Errorf("missing on a real host: %+v", missing)
	}
	if sim := ResolveCDIHook(Config{NVIDIACDIHookPath: hook, Simulate: "a100-40gb"}); sim.Use || !strings.Contains(sim.Message, "simulated driver") {
		t.Errorf("missing under --simulate: %+v", sim)
	}
	if off := ResolveCDIHook(Config{NVIDIACDIHookPath: NoCDIHook}); off.Use || off.Message != "" {
		t.Errorf("--nvidia-cdi-hook-path=none: %+v", off)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if there := ResolveCDIHook(Config{NVIDIACDIHookPath: "/usr/bin/nvidia-cdi-hook", NVIDIACDIHookCheck: hook}); !there.Use || there.Message != "" {
		t.Errorf("present where the agent sees it: %+v", there)
	}
}
