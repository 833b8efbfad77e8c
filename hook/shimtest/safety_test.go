package shimtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/migpro/migpro/telemetry"
)

const (
	flagPeak = 1
	flagExit = 2
)

// rawListener is a bare datagram socket standing in for the agent, keeping
// every decoded message with its pid, which the agent's service folds away.
type rawListener struct {
	path string
	mu   sync.Mutex
	msgs []telemetry.Message
	bad  int
}

func listenAt(t *testing.T, path string) *rawListener {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	l := &rawListener{path: path}
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			m, err := telemetry.Decode(buf[:n])
			l.mu.Lock()
			if err != nil {
				l.bad++
			} else {
				l.msgs = append(l.msgs, m)
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func listen(t *testing.T) *rawListener {
	t.Helper()
	return listenAt(t, filepath.Join(t.TempDir(), "telemetry.sock"))
}

// wait returns the messages once cond holds for them (10 s at most).
func (l *rawListener) wait(t *testing.T, cond func([]telemetry.Message) bool) []telemetry.Message {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		ms := append([]telemetry.Message(nil), l.msgs...)
		bad := l.bad
		l.mu.Unlock()
		if bad != 0 {
			t.Fatalf("%d malformed datagrams", bad)
		}
		if cond(ms) {
			return ms
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out; messages %+v", ms)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *rawListener) byPID(pid uint32) []telemetry.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []telemetry.Message
	for _, m := range l.msgs {
		if m.PID == pid {
			out = append(out, m)
		}
	}
	return out
}

// patternCmd is the pattern program under the shim, reporting to socket.
func patternCmd(a Artifacts, socket string, env []string, steps ...string) *exec.Cmd {
	cmd := exec.Command(a.Pattern, steps...)
	cmd.Env = append([]string{"LD_PRELOAD=" + a.Shim, "MIGPRO_TELEMETRY_SOCKET=" + socket, "STUB_TOTAL_BYTES=1048576000"}, env...)
	return cmd
}

func runRaw(t *testing.T, a Artifacts, socket string, env []string, steps ...string) string {
	t.Helper()
	out, err := patternCmd(a, socket, env, steps...).CombinedOutput()
	if err != nil {
		t.Fatalf("pattern %v: %v\n%s", steps, err, out)
	}
	return string(out)
}

// A library that chains dlsym(RTLD_NEXT, "getpid") works under the shim
// exactly as without it, and RTLD_DEFAULT / RTLD_NEXT from the program
// keep their meaning.
func TestDlsymNextChains(t *testing.T) {
	a := artifacts(t)
	var outs []string
	for _, env := range [][]string{nil, {"LD_PRELOAD=" + a.Shim}} {
		cmd := exec.Command(a.Chain)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok ") {
			t.Fatalf("chainprog with env %v: %v\n%s", env, err, out)
		}
		outs = append(outs, strings.Fields(string(out))[0])
	}
	if outs[0] != outs[1] {
		t.Fatalf("output without the shim %q, with it %q", outs[0], outs[1])
	}
}

var glibcVersion = regexp.MustCompile(`\(?GLIBC_([0-9]+)\.([0-9]+)(?:\.[0-9]+)?\)?`)

// Every glibc symbol the shim needs exists in glibc 2.17.
func TestShimGlibcFloor(t *testing.T) {
	a := artifacts(t)
	out, err := exec.Command("objdump", "-T", a.Shim).Output()
	if err != nil {
		t.Fatalf("objdump -T: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		m := glibcVersion.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		seen++
		major, _ := strconv.Atoi(m[1])
		minor, _ := strconv.Atoi(m[2])
		if major > 2 || (major == 2 && minor > 17) {
			t.Errorf("needs a glibc newer than 2.17: %s", strings.TrimSpace(line))
		}
	}
	if seen == 0 {
		t.Fatalf("objdump -T shows no glibc symbol at all:\n%s", out)
	}
}

// The shim's socket is on a high close-on-exec fd; a program that closes
// every fd and puts a TCP connection on the shim's number gets no datagram
// in it, and the shim keeps reporting on a socket of its own.
func TestShimSocketNotHijacked(t *testing.T) {
	a := artifacts(t)
	l := listen(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := tcp.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	port := tcp.Addr().(*net.TCPAddr).Port
	out := runRaw(t, a, l.path, []string{"MIGPRO_TELEMETRY_INTERVAL_MS=20"},
		"alloc:100", fmt.Sprintf("hijack:%d", port), "sleep:40", "alloc:200", "sleep:40", "alloc:300", "free:0")
	var n, first, cloexec int
	if _, err := fmt.Sscanf(out, "sockets %d first %d cloexec %d", &n, &first, &cloexec); err != nil {
		t.Fatalf("pattern output %q: %v", out, err)
	}
	if n != 1 || first < 500 || cloexec != 1 {
		t.Fatalf("the program saw %d sockets, the first at fd %d, close-on-exec %d: want the shim's alone, at fd >= 500, close-on-exec", n, first, cloexec)
	}
	select {
	case b := <-got:
		if len(b) != 0 {
			t.Fatalf("the program's TCP connection received %d bytes from the shim: %q", len(b), b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("TCP connection never closed")
	}
	ms := l.wait(t, func(ms []telemetry.Message) bool { return len(ms) > 0 && ms[len(ms)-1].Flags&flagExit != 0 })
	last := ms[len(ms)-1]
	if last.Allocs != 3 || last.Frees != 1 || last.Current != 500 || last.Peak != 600 || len(ms) < 3 {
		t.Fatalf("after the hijack the agent got %+v", ms)
	}
}

// Fork children report their own counters under their own pid, starting
// from zero; the parent's counts are untouched; and forking while other
// threads allocate neither deadlocks nor loses a count.
func TestShimForkAndThreads(t *testing.T) {
	a := artifacts(t)
	l := listen(t)
	out := runRaw(t, a, l.path, nil, "alloc:1000", "fork:4000", "forkthreads:4:3000:64:20", "alloc:7", "free:0")
	sc := bufio.NewScanner(strings.NewReader(out))
	var child uint32
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "child "); ok {
			p, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				t.Fatal(err)
			}
			child = uint32(p)
		}
	}
	if child == 0 {
		t.Fatalf("no child pid in %q", out)
	}
	done := func(ms []telemetry.Message) int {
		n := 0
		for _, m := range ms {
			if m.Flags&flagExit != 0 {
				n++
			}
		}
		return n
	}
	// 21 children and the parent each end with an exit sample.
	ms := l.wait(t, func(ms []telemetry.Message) bool { return done(ms) == 22 })
	cm := l.byPID(child)
	if len(cm) == 0 {
		t.Fatal("the child sent nothing")
	}
	if e := cm[len(cm)-1]; e.Flags&flagExit == 0 || e.Allocs != 2 || e.Frees != 1 || e.Current != 2000 || e.Peak != 4000 {
		t.Fatalf("child's last message %+v, want exit with 2 allocs, 1 free, 2000 live, peak 4000", e)
	}
	var parent *telemetry.Message
	pids := map[uint32]bool{}
	for i := range ms {
		pids[ms[i].PID] = true
		if ms[i].Flags&flagExit != 0 && ms[i].Allocs == 1+4*3000+1 {
			parent = &ms[i]
		}
	}
	if parent == nil || parent.Frees != 4*3000+1 || parent.Current != 7 || parent.Peak < 1000 {
		t.Fatalf("no parent exit sample with exact counts; messages %+v", ms)
	}
	if len(pids) != 22 {
		t.Fatalf("%d distinct pids sent, want 22", len(pids))
	}
	for _, m := range ms {
		if m.PID != parent.PID && m.PID != child && (m.Allocs > 2 || m.Current > 64) {
			t.Fatalf("a child reported the parent's counts: %+v", m)
		}
	}
}

var errNoRootfs = errors.New("no old-glibc rootfs")

// oldGlibcRoot builds (once, cached) the rootfs with the oldest glibc the
// Debian archive offers here, through the project's script.
func oldGlibcRoot(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MIGPRO_OLDGLIBC_DIR")
	if dir == "" {
		dir = "/var/cache/migpro-shimtest/oldglibc"
	}
	src, err := SourceDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(src, "shimtest", "setup", "oldglibc-rootfs.sh"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", errNoRootfs, err, out)
	}
	return filepath.Join(dir, "rootfs")
}

// In a rootfs with glibc 2.31 (before dlsym moved into libc under
// GLIBC_2.34), the shim as built here loads, counts exactly, and keeps
// dlsym(RTLD_NEXT) chains working, for programs built against that glibc.
func TestShimOnOldestGlibc(t *testing.T) {
	a := artifacts(t)
	root := oldGlibcRoot(t)
	ready, err := os.ReadFile(filepath.Join(root, ".ready"))
	if err != nil {
		t.Fatal(err)
	}
	work, err := os.MkdirTemp(filepath.Join(root, "tmp"), "shimtest")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	lib := filepath.Join(root, "lib", "x86_64-linux-gnu")
	sys := []string{"--sysroot=" + root, "-B" + filepath.Join(root, "usr/lib/x86_64-linux-gnu"),
		"-L" + filepath.Join(root, "usr/lib/x86_64-linux-gnu"), "-L" + lib, "-Wl,-rpath-link," + lib}
	old, err := BuildPrograms(work, sys)
	if err != nil {
		t.Fatal(err)
	}
	shim, err := os.ReadFile(a.Shim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old.Shim, shim, 0o755); err != nil {
		t.Fatal(err)
	}
	in := func(p string) string { return "/" + strings.TrimPrefix(strings.TrimPrefix(p, root), "/") }
	sock := filepath.Join(work, "telemetry.sock")
	l := listenAt(t, sock)
	steps := strings.Fields("alloc:1000 alloc:5000 pitch:100:3 managed:700 async:300 pool:200 create:4096 free:1 free:4 threads:4:2000:64 info")
	want, err := Expect(steps)
	if err != nil {
		t.Fatal(err)
	}
	for _, via := range []string{"link", "dlsym", "procaddress"} {
		cmd := chrooted(root, in(old.Pattern), steps...)
		cmd.Env = []string{"LD_PRELOAD=" + in(old.Shim), "MIGPRO_TELEMETRY_SOCKET=" + in(sock), "STUB_TOTAL_BYTES=1048576000", "PATTERN_VIA=" + via,
			// $ORIGIN needs /proc, which the bare rootfs lacks.
			"LD_LIBRARY_PATH=" + in(work)}
		if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
			t.Fatalf("%s: pattern via %s in the %s rootfs: %v\n%s", strings.TrimSpace(string(ready)), via, root, err, out)
		}
	}
	ms := l.wait(t, func(ms []telemetry.Message) bool {
		n := 0
		for _, m := range ms {
			if m.Flags&flagExit != 0 {
				n++
			}
		}
		return n == 3
	})
	for _, m := range ms {
		if m.Flags&flagExit != 0 && (m.Allocs != want.Allocs || m.Frees != want.Frees || m.Current != want.Current || m.Peak != want.Peak) {
			t.Fatalf("exit message %+v, want %+v", m, want)
		}
	}
	cmd := chrooted(root, in(old.Chain))
	cmd.Env = []string{"LD_PRELOAD=" + in(old.Shim), "LD_LIBRARY_PATH=" + in(work)}
	if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "ok ") {
		t.Fatalf("chainprog under the shim on old glibc: %v\n%s", err, out)
	}
	ver, err := chrooted(root, "/lib/x86_64-linux-gnu/libc.so.6").CombinedOutput()
	if err != nil || !strings.Contains(string(ver), "release version 2.31") {
		t.Fatalf("the rootfs's glibc is not 2.31: %v\n%s", err, ver)
	}
}

// chrooted runs prog inside root. The chroot happens in the child, so the
// environment (LD_PRELOAD above all) reaches only prog, not a host chroot
// binary.
func chrooted(root, prog string, args ...string) *exec.Cmd {
	cmd := exec.Command(prog, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	cmd.Dir = "/"
	return cmd
}
