//go:build podman

package cdi

// An opt-in check against a real podman (4.3 accepts cdiVersion <= 0.5.0 and
// reads only /etc/cdi and /var/run/cdi):
//
//	go test -tags podman -run Podman -v ./cdi/
//
// It writes one spec of its own kind, migpro.dev/cdi-test, into /var/run/cdi
// and removes it at the end.

import (
	"crypto/rand"
	"fmt"
	"github.com/migpro/migpro/internal/quietlog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPodmanRunsSpec(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("podman not installed: run `make e2e-deps-podman` (make test-unit does)")
	}
	d := newFakeDriver(t)
	d.addGPU(0)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	inst := testInstance
	inst.UUID = fmt.Sprintf("MIG-%x-1d2e-5f60-8a9b-0c1d2e3f4a5b", b)
	d.addInstance(inst, 21, 22)
	w, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir("/var/run/cdi"), WithKind("migpro.dev/cdi-test"))
	if err != nil {
		t.Fatal(err)
	}
	name, err := w.Write(inst, d.paths)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Remove(inst.UUID) })

	rootfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	bb, err := os.ReadFile("/usr/bin/busybox")
	if err != nil {
		t.Fatalf("no static busybox: %v (run `make e2e-deps-podman`, as make test-unit does)", err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "busybox"), bb, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `echo "env $NVIDIA_VISIBLE_DEVICES $CUDA_VISIBLE_DEVICES"; ` +
		`for n in /dev/nvidia0 /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia-caps/nvidia-cap21 /dev/nvidia-caps/nvidia-cap22; do ` +
		`/bin/busybox stat -c "node %n %t:%T %F" $n; done; ` +
		`/bin/busybox cat /dev/nvidia-caps/nvidia-cap21 2>&1 | /bin/busybox head -1 | /bin/busybox sed 's/^/cat /'`
	cmd := exec.Command("podman", "run", "--rm", "--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"--network", "none", "--device", name, "--rootfs", rootfs, "/bin/busybox", "sh", "-c", script)
	out, err := cmd.CombinedOutput()
	t.Logf("podman output:\n%s", out)
	if err != nil {
		t.Fatalf("podman run --device %s: %v", name, err)
	}
	s := string(out)
	for _, want := range []string{
		"env " + inst.UUID + " " + inst.UUID,
		"node /dev/nvidia0 c3:0 character special file",
		"node /dev/nvidiactl c3:ff character special file",
		"node /dev/nvidia-uvm 1fe:0 character special file",
		"node /dev/nvidia-caps/nvidia-cap21 ec:15 character special file",
		"node /dev/nvidia-caps/nvidia-cap22 ec:16 character special file",
		// The device cgroup lets the container open the node; with no driver
		// behind it, open fails with ENXIO rather than EPERM.
		"No such device or address",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("container output lacks %q", want)
		}
	}
}
