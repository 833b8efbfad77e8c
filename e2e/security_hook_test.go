//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/e2e/harness"
)

// A glibc image with libc and nothing else (no libdl.so.2) runs its dynamic
// programs under the hook's preload list: the shim depends on libc alone.
// When the shim linked libdl.so.2, every such program exited 127.
func TestSecurityShimLibcOnlyImage(t *testing.T) {
	e := newHookEnv(t)
	pm := harness.Podman(t)
	dev := e.writeSpec(t, "")
	root := t.TempDir()
	src := filepath.Join(t.TempDir(), "hello.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nint main(void) { puts(\"hello from libc\"); return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "hello")
	if out, err := exec.Command("gcc", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	copyInto(t, bin, filepath.Join(root, "app", "hello"))
	for _, lib := range sharedLibs(t, bin) {
		if strings.Contains(filepath.Base(lib), "libdl") {
			t.Fatalf("the test program itself needs %s", lib)
		}
		copyInto(t, lib, filepath.Join(root, lib))
	}
	libs, _ := filepath.Glob(filepath.Join(root, "*", "*", "libdl*"))
	more, _ := filepath.Glob(filepath.Join(root, "*", "libdl*"))
	if len(libs)+len(more) != 0 {
		t.Fatalf("the image has libdl: %v %v", libs, more)
	}
	r := pm.RunRootfs(t, root, harness.DeviceFlags(dev), "/app/hello")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "hello from libc") {
		t.Fatalf("a libc-only program under the shim: exit %d\n%s", r.ExitCode, r.Combined())
	}
	log, _ := os.ReadFile(e.logFile)
	if strings.Contains(string(log), "fail-open") {
		t.Fatalf("the hook did not set up telemetry (preload list not written):\n%s", log)
	}
}

// A container rootfs with a FIFO planted at /etc/ld.so.preload: podman
// start runs the hook as host root, which refuses the container without
// ever opening the FIFO (a device node there would be opened the same way,
// outside the container's device rules). A writer blocked in open(2)
// shows an open.
func TestSecurityHookPlantedFIFO(t *testing.T) {
	e := newHookEnv(t)
	pm := harness.Podman(t)
	dev := e.writeSpec(t, "")
	root := e.rootfs(t)
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "etc", "ld.so.preload")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{})
	go func() {
		fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
			close(opened)
		}
	}()
	r := pm.RunRootfs(t, root, harness.DeviceFlags(dev), "/app/pattern", "alloc:1")
	select {
	case <-opened:
		t.Fatalf("the hook opened the FIFO planted at /etc/ld.so.preload (container exit %d)\n%s", r.ExitCode, r.Combined())
	case <-time.After(time.Second):
	}
	if r.ExitCode == 0 || !strings.Contains(r.Combined(), "not a regular file") {
		t.Errorf("container with a FIFO at /etc/ld.so.preload: exit %d, want a refusal naming it\n%s", r.ExitCode, r.Combined())
	}
	if fd, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		<-opened
		unix.Close(fd)
	}
}
