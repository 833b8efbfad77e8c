package shimtest

import (
	"os"
	"time"

	"github.com/migpro/migpro/telemetry"

	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A child forked while another thread does the shim's first set-up
// finishes its own allocation: the fork handler is in place from the
// shim's load, so the child redoes the set-up instead of spinning forever.
func TestForkDuringFirstSetUp(t *testing.T) {
	a := artifacts(t)
	src, err := SourceDir()
	if err != nil {
		t.Fatal(err)
	}
	td := filepath.Join(src, "shimtest", "testdata")
	dir := t.TempDir()
	slow, prog := filepath.Join(dir, "libslowsock.so"), filepath.Join(dir, "forkinit")
	if err := gcc(dir, []string{"-O2", "-Wall", "-fPIC", "-shared", "-o", slow, filepath.Join(td, "slowsock.c"), "-ldl"}); err != nil {
		t.Fatal(err)
	}
	if err := gcc(dir, []string{"-O2", "-Wall", "-o", prog, filepath.Join(td, "forkinit.c"), "-L" + a.Dir, "-lcuda", "-lpthread", "-Wl,-rpath," + a.Dir}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		cmd := exec.Command(prog)
		cmd.Env = []string{"LD_PRELOAD=" + slow + " " + a.Shim, "MIGPRO_TELEMETRY_SOCKET=" + filepath.Join(dir, "none.sock")}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok") {
			t.Fatalf("run %d: %v\n%s", i, err, out)
		}
	}
}

// In a setuid or setgid program (AT_SECURE) the shim, which the loader
// still takes from /etc/ld.so.preload, reads no environment and sends
// nothing. The program runs setgid in a private mount namespace whose /etc
// preloads the shim.
func TestSecureProgramSendsNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the test makes a setgid program and a mount namespace: it needs root")
	}
	a := artifacts(t)
	src, err := SourceDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "suidalloc")
	if err := gcc(dir, []string{"-O2", "-Wall", "-o", prog, filepath.Join(src, "shimtest", "testdata", "suidalloc.c"), "-ldl"}); err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(dir, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if cache, err := os.ReadFile("/etc/ld.so.cache"); err == nil {
		if err := os.WriteFile(filepath.Join(etc, "ld.so.cache"), cache, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(etc, "ld.so.preload"), []byte(a.Shim+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "telemetry.sock")
	l := listenAt(t, sock)
	run := func(setgid bool) string {
		t.Helper()
		mode := os.FileMode(0o755)
		if setgid {
			mode |= os.ModeSetgid
		}
		if err := os.Chown(prog, 0, 1); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(prog, mode); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$1" /etc && exec "$2" "$3"`, "sh", etc, prog, a.Stub)
		cmd.Env = []string{"MIGPRO_TELEMETRY_SOCKET=" + sock, "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok") {
			t.Fatalf("setgid %v: %v\n%s", setgid, err, out)
		}
		return string(out)
	}
	// Not setgid: the preloaded shim reports, so the set-up works.
	run(false)
	l.wait(t, func(ms []telemetry.Message) bool { return len(ms) > 0 })
	before := l.count()
	run(true)
	time.Sleep(300 * time.Millisecond)
	if after := l.count(); after != before {
		t.Fatalf("the shim in a setgid program sent %d datagrams, want none", after-before)
	}
}

func (l *rawListener) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.msgs)
}

// A program asking "is the CUDA driver loaded?" with dlsym(RTLD_DEFAULT,
// "cuMemAlloc_v2"), with RTLD_NEXT, or on its own handle (dlopen(NULL)) is
// told no until it loads the driver, shim or not (issue 33, low 8: the
// shim's own exports answered yes to the last two).
func TestShimIsNoDriver(t *testing.T) {
	a := artifacts(t)
	src, err := SourceDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "cudaloaded")
	if err := gcc(dir, []string{"-O2", "-Wall", "-o", prog, filepath.Join(src, "shimtest", "testdata", "cudaloaded.c"), "-ldl"}); err != nil {
		t.Fatal(err)
	}
	for _, env := range [][]string{nil, {"LD_PRELOAD=" + a.Shim}} {
		cmd := exec.Command(prog, a.Stub)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "no no no yes yes yes" {
			t.Errorf("env %v: %v %q, want \"no no no yes yes yes\"", env, err, out)
		}
	}
}
