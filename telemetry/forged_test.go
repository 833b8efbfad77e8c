package telemetry

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "MIGPRO_TELEMETRY_TEST_SEND"

// TestHelperSend is not a test: run with helperEnv=<socket>, it is a
// sender in whatever namespace and uid it was started with. It exits 3 when
// the socket refuses it (permission denied). After sending it waits for its
// stdin to close: the service checks a sender's pid namespace through
// /proc/PID, which a sender that has exited no longer has.
func TestHelperSend(t *testing.T) {
	sock := os.Getenv(helperEnv)
	if sock == "" {
		return
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if errors.Is(err, syscall.EACCES) {
		os.Exit(3)
	}
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	for i := 1; i <= 20; i++ {
		if _, err := c.Write(Encode(make([]byte, WireSize), Message{PID: 7, Seq: uint64(i), Current: 39 << 30, Peak: 39 << 30})); err != nil {
			os.Exit(2)
		}
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// containerInit starts `sleep` as pid 1 of a new pid namespace and returns
// its pid as the agent (this test) sees it.
func containerInit(t *testing.T) int {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("pid namespaces need root")
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	self, _ := os.Readlink("/proc/self/ns/pid")
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		kids, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
		if f := strings.Fields(string(kids)); len(f) == 1 {
			pid, _ := strconv.Atoi(f[0])
			ns, _ := os.Readlink("/proc/" + f[0] + "/ns/pid")
			if ns != "" && ns != self {
				return pid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no process in a new pid namespace")
	return 0
}

// publicCopy copies the test binary where any uid may run it.
func publicCopy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tbin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, "t")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	out.Close()
	return dst
}

func helper(bin, sock string) *exec.Cmd {
	cmd := exec.Command(bin, "-test.run=^TestHelperSend$")
	cmd.Env = append(os.Environ(), helperEnv+"="+sock)
	return cmd
}

// runUntil starts a sender and keeps it alive until cond holds, then lets it
// exit and checks it succeeded.
func runUntil(t *testing.T, cmd *exec.Cmd, what string, cond func() bool) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, what, cond)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sender for %s: %v %s", what, err, out.String())
	}
}

// TestForgedTelemetryRefused: acting as uid 65534, twenty forged datagrams
// claiming 39 GiB once put a container at capacity. Now a host user cannot
// reach the socket at all, and a sender outside the container's pid
// namespace (even host root) is counted foreign and ignored; a process
// inside the container is heard.
func TestForgedTelemetryRefused(t *testing.T) {
	initPID := containerInit(t)
	s := newService(t, WithPIDCheck(procAlive))
	ep, err := s.Register(Registration{ID: "victim", PID: initPID, MIGUUIDs: []string{"MIG-1"}})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Dir(ep.Dir))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("containers directory mode %v %v, want 0700", fi.Mode(), err)
	}
	bin := publicCopy(t)

	// uid 65534 on the host: refused by the directory modes.
	nobody := helper(bin, ep.Socket)
	nobody.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := nobody.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("uid 65534 sending to the socket: %v %s, want permission denied", err, out)
	}

	// Host root, outside the container's pid namespace: heard by the
	// kernel, refused by the credential check.
	runUntil(t, helper(bin, ep.Socket), "forged datagrams counted foreign", func() bool { return s.Stats().Foreign == 20 })
	if got := s.Samples("victim"); len(got) != 0 {
		t.Fatalf("forged datagrams became samples: %+v", got)
	}

	// A process inside the container's pid namespace is heard.
	inside := exec.Command("nsenter", "-t", strconv.Itoa(initPID), "--pid", "--", bin, "-test.run=^TestHelperSend$")
	inside.Env = append(os.Environ(), helperEnv+"="+ep.Socket)
	runUntil(t, inside, "the container's own datagrams", func() bool { return len(s.Samples("victim")) == 20 })
	if f := s.Stats().Foreign; f != 20 {
		t.Fatalf("foreign = %d after the container's own datagrams", f)
	}
}
