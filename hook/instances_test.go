package hook

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/migpro/migpro/telemetry/telemetrytest"
)

const (
	givenA = "MIG-aaaaaaaa-2222-3333-4444-555555555555"
	givenB = "MIG-bbbbbbbb-2222-3333-4444-555555555555"
	other  = "MIG-cccccccc-2222-3333-4444-555555555555"
)

// A container given instance A by its CDI spec (the hook's --instance) that
// names another instance in its env and annotations is registered with A
// alone, and the hook logs one line naming what it ignored; a container
// with two specs is registered with both, from each hook's run.
func TestRunRegistersOnlyTheInstancesItsSpecsGave(t *testing.T) {
	s, sock := telemetrytest.Serve(t)
	pid := fakeContainer(t)
	rootfs := t.TempDir()
	dir := t.TempDir()
	hooks := fmt.Sprintf(`{"createRuntime":[{"path":"/usr/local/bin/migpro-hook","args":["migpro-hook","--instance",%q,"createRuntime"]},`+
		`{"path":"/usr/local/bin/migpro-hook","args":["migpro-hook","--instance",%q,"createRuntime"]},`+
		`{"path":"/usr/bin/other","args":["other","--instance",%q]}]}`, givenA, givenB, other)
	cfgJSON := fmt.Sprintf(`{"ociVersion":"1.0.2","root":{"path":%q},"process":{"env":["NVIDIA_VISIBLE_DEVICES=%s","CUDA_VISIBLE_DEVICES=%s"]},"hooks":%s,"annotations":{%q:%q}}`,
		rootfs, other, givenA, hooks, AnnotationMIGUUIDs, other)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfgJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs []string
	cfg := Config{AgentSocket: sock, Instances: []string{givenA}, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	if res, err := Run(cfg, stateJSON("ctr1", pid, dir, "creating")); err != nil || !res.Injected {
		t.Fatalf("Run = %+v, %v (logs %v)", res, err, logs)
	}
	top := s.Top()
	if len(top.Containers) != 1 || !slices.Equal(top.Containers[0].MIGUUIDs, []string{givenA, givenB}) {
		t.Fatalf("registered %+v, want exactly the two instances its specs gave (%s, %s)", top.Containers, givenA, givenB)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], other) || !strings.Contains(logs[0], "did not give it") {
		t.Fatalf("logs %q, want one line naming %s", logs, other)
	}

	// Without --instance (podman hooks.d, no CDI) the env still names them.
	bundle := bundleFor(t, rootfs, "NVIDIA_VISIBLE_DEVICES="+other)
	cfg.Instances = nil
	if _, err := Run(cfg, stateJSON("ctr2", pid, bundle, "creating")); err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Top().Containers {
		if c.ID == "ctr2" && !slices.Equal(c.MIGUUIDs, []string{other}) {
			t.Fatalf("hooks.d registration %+v", c)
		}
	}
}
