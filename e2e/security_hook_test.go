//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/telemetry/telemetryapi"
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

// A container given one instance by its CDI device that names another
// holder's instance (the migpro.dev/mig-uuids annotation, which CRI-O fills
// from pod annotations) is registered with its own instance alone: the
// agent's spec names the instance in the hook's arguments, and the hook
// ignores what the container names, with one line in its log. Before, the
// registration named both, so the container's telemetry and marks could be
// tied to the other holder's instance. A container given two instances is
// registered with both.
func TestSecurityHookRegistersOnlyGivenInstances(t *testing.T) {
	e := newHookEnv(t)
	a := startAgent(t, "a100-40gb", "--hook", e.hookBin, "--shim", e.art.Shim, "--poll-every", "100ms")
	mine := strings.TrimPrefix(a.mustMigctl(t, "alloc", "1g.5gb"), e2eKind+"=")
	theirs := strings.TrimPrefix(a.mustMigctl(t, "alloc", "1g.5gb"), e2eKind+"=")
	pm := harness.Podman(t)
	run := func(flags []string) (telemetryapi.TopEntry, harness.Result) {
		t.Helper()
		done := make(chan harness.Result, 1)
		go func() { done <- pm.RunRootfs(t, e.rootfs(t), flags, "/app/pattern", "alloc:1", "sleep:4000") }()
		var entry telemetryapi.TopEntry
		eventually(t, "the container registered", 60*time.Second, func() bool {
			select {
			case r := <-done:
				t.Fatalf("container ended before it registered: %+v", r)
			default:
			}
			for _, c := range a.top(t).Containers {
				entry = c
				return true
			}
			return false
		})
		return entry, <-done
	}
	flags := append(harness.DeviceFlags(e2eKind+"="+mine), "--annotation", "migpro.dev/mig-uuids="+theirs)
	c, r := run(flags)
	r.Must(t)
	if len(c.MIGUUIDs) != 1 || c.MIGUUIDs[0] != mine {
		t.Fatalf("container given %s and naming %s registered with %v, want only %s", mine, theirs, c.MIGUUIDs, mine)
	}
	log, _ := os.ReadFile(filepath.Join(a.Dir, "hook.log"))
	if !strings.Contains(string(log), theirs) || !strings.Contains(string(log), "did not give it") {
		t.Errorf("the hook's log does not name the ignored instance %s:\n%s", theirs, log)
	}
	waitDeregistered(t, a, c.ID)

	c, r = run(harness.DeviceFlags(e2eKind+"="+mine, e2eKind+"="+theirs))
	r.Must(t)
	want := []string{mine, theirs}
	slices.Sort(want)
	if !slices.Equal(c.MIGUUIDs, want) {
		t.Fatalf("container given two instances registered with %v, want %v", c.MIGUUIDs, want)
	}
}
