package hook

import (
	"slices"
	"strings"
	"testing"
)

func TestCDIEdits(t *testing.T) {
	e := CDIEdits(EditsConfig{HookPath: "/opt/h", ShimPath: "/opt/shim.so", AgentSocket: "/a.sock", FailClosed: true, IntervalMs: 50, LogFile: "/l"})
	// No LD_PRELOAD: it would replace the image's; the hook preloads the
	// shim through /etc/ld.so.preload.
	for _, kv := range e.Env {
		if strings.HasPrefix(kv, "LD_PRELOAD=") {
			t.Errorf("the spec sets %s, replacing the image's own LD_PRELOAD", kv)
		}
	}
	if !slices.Contains(e.Env, "MIGPRO_TELEMETRY_SOCKET="+ContainerSocket) ||
		!slices.Contains(e.Env, "MIGPRO_TELEMETRY_INTERVAL_MS=50") {
		t.Errorf("env %v", e.Env)
	}
	if len(e.Mounts) != 1 || e.Mounts[0].HostPath != "/opt/shim.so" || e.Mounts[0].ContainerPath != ContainerShim || !slices.Contains(e.Mounts[0].Options, "ro") {
		t.Errorf("mounts %+v", e.Mounts)
	}
	if len(e.Hooks) != 2 || e.Hooks[0].Stage != StageCreateRuntime || e.Hooks[1].Stage != StagePoststop {
		t.Fatalf("hooks %+v", e.Hooks)
	}
	for _, h := range e.Hooks {
		want := []string{"migpro-hook", "--agent-socket", "/a.sock", "--fail-closed", "--log-file", "/l", h.Stage}
		if h.Path != "/opt/h" || !slices.Equal(h.Args, want) || h.Env == nil || len(h.Env) != 0 {
			t.Errorf("hook %+v, want args %v and an empty env", h, want)
		}
	}
	d := CDIEdits(EditsConfig{})
	if d.Hooks[0].Path != DefaultHookPath || d.Mounts[0].HostPath != DefaultShimPath || slices.Contains(d.Hooks[0].Args, "--fail-closed") || len(d.Env) != 1 {
		t.Errorf("defaults %+v", d)
	}
}

func TestContainerEdits(t *testing.T) {
	e := CDIEdits(EditsConfig{})
	c := e.ContainerEdits()
	if !slices.Equal(c.Env, e.Env) || len(c.Mounts) != 1 || c.Mounts[0].ContainerPath != ContainerShim || len(c.Hooks) != 2 {
		t.Fatalf("ContainerEdits = %+v", c)
	}
	if c.Hooks[0].HookName != "createRuntime" || c.Hooks[1].HookName != "poststop" || c.Hooks[0].Env == nil || !slices.Equal(c.Hooks[0].Args, e.Hooks[0].Args) {
		t.Errorf("hooks %+v %+v", c.Hooks[0], c.Hooks[1])
	}
	// The result is a copy: changing it leaves e alone.
	c.Mounts[0].Options[0] = "rw"
	if e.Mounts[0].Options[0] != "ro" {
		t.Error("ContainerEdits shares slices with Edits")
	}
}
