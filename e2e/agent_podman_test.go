//go:build e2e

package e2e

import (
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/migpro/migpro/e2e/harness"
)

// devScript prints what a container sees of its MIG instance: the env, the
// device nodes, and what reading the GPU node does ("No such device or
// address" when the device cgroup lets it through to a node with no driver).
const devScript = `echo "NVD=$NVIDIA_VISIBLE_DEVICES"; echo "CVD=$CUDA_VISIBLE_DEVICES"; ` +
	`ls /dev/nvidia-caps/ | sed 's/^/CAP=/'; for n in /dev/nvidia[0-9]* /dev/nvidiactl /dev/nvidia-uvm; do echo "NODE=$n"; done; ` +
	`cat /dev/nvidia[0-9]* 2>&1 | head -1 | sed 's/^/READ=/'`

// checkDeviceView asserts the container saw exactly its instance.
func checkDeviceView(t *testing.T, out, uuid string) {
	t.Helper()
	for _, want := range []string{"NVD=" + uuid, "CVD=" + uuid, "NODE=/dev/nvidiactl", "NODE=/dev/nvidia-uvm", "No such device or address"} {
		if !strings.Contains(out, want) {
			t.Errorf("container output lacks %q:\n%s", want, out)
		}
	}
	if n := len(regexp.MustCompile(`CAP=nvidia-cap\d+`).FindAllString(out, -1)); n != 2 {
		t.Errorf("container sees %d nvidia-caps nodes, want 2 (GI and CI):\n%s", n, out)
	}
}

// Issue 3, e2e 1: migctl alloc, podman run --device <name>, migctl free.
func TestAgentPodman(t *testing.T) {
	a := startAgent(t, "a100-80gb")
	name := a.mustMigctl(t, "alloc", "2g.20gb")
	if !strings.HasPrefix(name, e2eKind+"=MIG-") {
		t.Fatalf("alloc printed %q, want a %s CDI name", name, e2eKind)
	}
	uuid := strings.TrimPrefix(name, e2eKind+"=")
	if !specExists(uuid) {
		t.Fatalf("no CDI spec for %s in /var/run/cdi", uuid)
	}
	p := harness.Podman(t)
	root := harness.BusyboxRootfs(t)
	r := p.RunRootfs(t, root, harness.DeviceFlags(name), "sh", "-c", devScript).Must(t)
	checkDeviceView(t, r.Stdout+r.Stderr, uuid)

	st := a.status(t)
	if len(st.Instances) != 1 || st.Instances[0].Profile != "2g.20gb" || st.Instances[0].State != "in-use" {
		t.Fatalf("status after alloc: %+v", st.Instances)
	}
	a.mustMigctl(t, "free", name)
	if specExists(uuid) {
		t.Fatalf("spec of %s still in /var/run/cdi after free", uuid)
	}
	if st := a.status(t); len(st.Instances) != 0 {
		t.Fatalf("instances after free: %+v", st.Instances)
	}
	// The freed name no longer resolves: podman refuses to start.
	if r := p.RunRootfs(t, root, harness.DeviceFlags(name), "true"); r.ExitCode == 0 {
		t.Fatal("podman ran with a freed CDI device")
	}
	// Bad input is one clear line and exit 2.
	for _, args := range [][]string{{"alloc", "5g.99gb"}, {"free", name}} {
		out, err := a.migctl(t, args...)
		if code := exitCode(err); code != 2 || strings.Count(out, "\n") > 0 || !strings.Contains(out, args[1]) {
			t.Errorf("migctl %v: exit %d, %q; want exit 2 and one line naming the input", args, code, out)
		}
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
