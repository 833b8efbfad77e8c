package shimtest

import (
	"bufio"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/telemetry"
)

// fullQueue binds a datagram socket at path and fills its receive queue
// from a second socket until the kernel refuses more, as an agent that has
// fallen behind would look to the shim.
func fullQueue(t *testing.T, path string) int {
	t.Helper()
	rx, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(rx) })
	if err := unix.Bind(rx, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	tx, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tx)
	filled := 0
	for ; filled < 100000; filled++ {
		err := unix.Sendto(tx, []byte{0}, unix.MSG_DONTWAIT, &unix.SockaddrUnix{Name: path})
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if filled == 0 || filled == 100000 {
		t.Fatalf("could not fill the queue: %d datagrams went in", filled)
	}
	return rx
}

// drain reads every queued datagram without waiting and returns the ones
// that decode as shim samples.
func drain(t *testing.T, rx int) []telemetry.Message {
	t.Helper()
	var out []telemetry.Message
	buf := make([]byte, 256)
	for {
		n, _, err := unix.Recvfrom(rx, buf, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if m, err := telemetry.Decode(buf[:n]); err == nil {
			out = append(out, m)
		}
	}
}

// An exiting process whose agent queue is full waits a little for room
// rather than losing its exit sample, which carries the final counters: the
// queue here is drained only after the program has finished its work, so
// the sample arrives only if the shim retried.
func TestShimExitWaitsForRoom(t *testing.T) {
	a := artifacts(t)
	path := filepath.Join(t.TempDir(), "telemetry.sock")
	rx := fullQueue(t, path)
	cmd := patternCmd(a, path, nil, "alloc:1000", "alloc:500", "free:0", "mark")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "mark" {
		t.Fatalf("pattern said %q, want mark", sc.Text())
	}
	// The destructor runs right after "mark"; give its first send time to
	// meet the full queue, then make room.
	time.Sleep(10 * time.Millisecond)
	var got []telemetry.Message
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		got = append(got, drain(t, rx)...)
		if n := len(got); n > 0 && got[n-1].Flags&flagExit != 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("the exit sample was lost to the full queue")
	}
	e := got[len(got)-1]
	if e.Flags&flagExit == 0 || e.Allocs != 2 || e.Frees != 1 || e.Current != 500 || e.Peak != 1500 {
		t.Fatalf("last sample %+v, want the exit sample with 2 allocs, 1 free, 500 live, peak 1500", e)
	}
	// The first allocation's sample met the full queue and was dropped:
	// the exit sample says so.
	if e.Dropped == 0 {
		t.Errorf("exit sample reports no dropped samples: %+v", e)
	}
}

// A send that fails (here: no agent at all) leaves the program's errno as
// the intercepted call found it.
func TestShimKeepsErrno(t *testing.T) {
	a := artifacts(t)
	out := runRaw(t, a, filepath.Join(t.TempDir(), "nobody.sock"), nil, "errno:1000")
	if want := "errno " + strconv.Itoa(int(syscall.EDOM)); strings.TrimSpace(out) != want {
		t.Fatalf("pattern printed %q, want %q (EDOM kept across the shim's failed send)", out, want)
	}
}
