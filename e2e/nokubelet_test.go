//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/e2e/harness"
)

// The paths an agent started with no flags but --simulate writes. The test
// refuses to run where any of them already exists: it would be another
// install's.
var defaultAgentPaths = []string{"/var/lib/migpro", filepath.Dir(defaults.AgentSocket)}

// On a host with no kubelet (podman or containerd only), the agent's
// defaults work: it says in one line that no kubelet is there, and migctl
// alloc and free work without any flag or environment variable.
func TestNoKubeletHostDefaults(t *testing.T) {
	harness.RequireRoot(t)
	for _, p := range append(defaultAgentPaths, harness.KubeletSocket, defaults.PodResourcesSocket) {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists: this test needs a host with no kubelet and no migpro install", p)
		}
	}
	dir := t.TempDir()
	a := &agentProc{Dir: dir, Socket: defaults.AgentSocket, log: filepath.Join(dir, "agent.log"),
		args: []string{"--simulate", "a100-40gb:1"}}
	t.Cleanup(func() {
		a.stop(t, syscall.SIGTERM)
		for _, p := range defaultAgentPaths {
			os.RemoveAll(p)
		}
		m, _ := filepath.Glob("/var/run/cdi/" + strings.ReplaceAll(defaults.CDIKind, "/", "-") + "*")
		for _, f := range m {
			os.Remove(f)
		}
	})
	a.start(t)

	migctl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(migproBin(t, "migctl"), args...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MIGPRO_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("migctl %v: %v: %s\nagent log:\n%s", args, err, out, a.logTail())
		}
		return strings.TrimSpace(string(out))
	}
	name := migctl("alloc", "1g.5gb")
	if !strings.HasPrefix(name, defaults.CDIKind+"=") {
		t.Fatalf("migctl alloc printed %q, want a %s= CDI name", name, defaults.CDIKind)
	}
	st := a.status(t)
	if len(st.Instances) != 1 || st.Instances[0].State != "in-use" {
		t.Fatalf("after alloc: %+v", st.Instances)
	}
	if out := migctl("free", name); strings.Contains(out, "kubelet") {
		t.Errorf("migctl free mentions the kubelet on a host without one: %s", out)
	}
	if st := a.status(t); len(st.Instances) != 0 {
		t.Fatalf("after free: %+v, want no instance", st.Instances)
	}
	said := strings.Count(a.logTail(), "no kubelet on this host")
	if said != 1 {
		t.Fatalf("the agent said %d times that there is no kubelet, want once:\n%s", said, a.logTail())
	}
}
