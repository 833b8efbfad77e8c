package hook

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/telemetry/telemetrytest"
)

// bundleFor writes a bundle whose config points at rootfs and carries env.
func bundleFor(t testing.TB, rootfs string, env ...string) string {
	t.Helper()
	dir := t.TempDir()
	q := make([]string, len(env))
	for i, e := range env {
		q[i] = strconv.Quote(e)
	}
	cfg := fmt.Sprintf(`{"ociVersion":"1.0.2","root":{"path":%q},"process":{"env":[%s]},"annotations":{"io.kubernetes.cri.sandbox-name":"pod-a","io.kubernetes.cri.sandbox-namespace":"team"}}`,
		rootfs, strings.Join(q, ","))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func stateJSON(id string, pid int, bundle, status string) *strings.Reader {
	return strings.NewReader(fmt.Sprintf(`{"ociVersion":"1.0.2","id":%q,"status":%q,"pid":%d,"bundle":%q}`, id, status, pid, bundle))
}

func TestRunRegistersInjectsAndDeregisters(t *testing.T) {
	s, sock := telemetrytest.Serve(t)
	pid := fakeContainer(t)
	rootfs := t.TempDir()
	bundle := bundleFor(t, rootfs, "NVIDIA_VISIBLE_DEVICES=MIG-11111111-2222-3333-4444-555555555555")
	var logs []string
	cfg := Config{AgentSocket: sock, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	res, err := Run(cfg, stateJSON("ctr1", pid, bundle, "creating"))
	if err != nil || !res.Injected || res.Stage != StageCreateRuntime {
		t.Fatalf("Run = %+v, %v (logs %v)", res, err, logs)
	}
	top := s.Top()
	if len(top.Containers) != 1 || top.Containers[0].PodName != "pod-a" || top.Containers[0].MIGUUIDs[0] != "MIG-11111111-2222-3333-4444-555555555555" {
		t.Fatalf("agent saw %+v", top)
	}
	inside := "/proc/" + strconv.Itoa(pid) + "/root" + rootfs + ContainerSocket
	if fi, err := os.Stat(inside); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket inside the container: %v", err)
	}
	if _, err := Run(cfg, stateJSON("ctr1", 0, bundle, "stopped")); err != nil {
		t.Fatalf("poststop: %v", err)
	}
	if len(s.Top().Containers) != 0 {
		t.Fatal("poststop did not deregister")
	}
	if len(logs) != 0 {
		t.Errorf("a clean run logged %v", logs)
	}
}

func TestRunFailOpenAndClosed(t *testing.T) {
	pid := fakeContainer(t)
	rootfs := t.TempDir()
	bundle := bundleFor(t, rootfs, "CUDA_VISIBLE_DEVICES=MIG-1")
	var logs []string
	cfg := Config{AgentSocket: filepath.Join(t.TempDir(), "down.sock"), Timeout: 200 * time.Millisecond,
		Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	res, err := Run(cfg, stateJSON("c", pid, bundle, "creating"))
	if err != nil || res.Skipped != "fail-open" || res.Injected {
		t.Fatalf("fail-open Run = %+v, %v", res, err)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "without telemetry") {
		t.Fatalf("want exactly one log line, got %q", logs)
	}
	if m := mountsUnder(t, pid, rootfs); len(m) != 0 {
		t.Errorf("mounted with the agent down: %v", m)
	}
	cfg.FailClosed = true
	if _, err := Run(cfg, stateJSON("c", pid, bundle, "creating")); !errors.Is(err, ErrAgent) {
		t.Fatalf("fail-closed Run = %v", err)
	}
}

func TestRunHostileRootfsLeavesNoRegistration(t *testing.T) {
	s, sock := telemetrytest.Serve(t)
	pid := fakeContainer(t)
	rootfs := t.TempDir()
	os.MkdirAll(filepath.Join(rootfs, "run"), 0o755)
	os.Symlink("/etc", filepath.Join(rootfs, "run", "migpro"))
	bundle := bundleFor(t, rootfs, "NVIDIA_VISIBLE_DEVICES=MIG-1")
	_, err := Run(Config{AgentSocket: sock}, stateJSON("evil", pid, bundle, "creating"))
	if !errors.Is(err, ErrUnsafeRootfs) || !strings.Contains(err.Error(), "/etc") {
		t.Fatalf("Run = %v, want ErrUnsafeRootfs naming /etc", err)
	}
	if len(s.Top().Containers) != 0 {
		t.Fatal("registration left behind")
	}
}

func TestRunBadInputAndNoMIG(t *testing.T) {
	cfg := Config{AgentSocket: "/nonexistent"}
	if _, err := Run(cfg, strings.NewReader("{bad")); !errors.Is(err, ErrBadInput) {
		t.Errorf("bad JSON: %v", err)
	}
	if _, err := Run(cfg, stateJSON("c", 1, "/nonexistent/bundle", "creating")); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("missing bundle: %v", err)
	}
	if _, err := Run(Config{Stage: "bogus"}, stateJSON("c", 1, "/b", "creating")); !errors.Is(err, ErrBadInput) {
		t.Errorf("bad stage: %v", err)
	}
	bundle := bundleFor(t, t.TempDir(), "NVIDIA_VISIBLE_DEVICES=0")
	res, err := Run(cfg, stateJSON("c", 1, bundle, "creating"))
	if err != nil || res.Skipped != "no MIG device" {
		t.Errorf("no MIG: %+v %v", res, err)
	}
}
