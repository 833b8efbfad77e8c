package telemetry

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/migpro/migpro/gpu/gputest"
	"github.com/migpro/migpro/internal/quietlog"
)

// shortDir keeps socket paths under the 108-byte unix limit.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func newService(t *testing.T, opts ...Option) *Service {
	t.Helper()
	opts = append([]Option{WithStateDir(shortDir(t)), WithPIDCheck(nil)}, opts...)
	s, err := New(append([]Option{WithLogger(quietlog.New())}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func dial(t *testing.T, sock string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatalf("dial %s: %v", sock, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c *net.UnixConn, m Message) {
	t.Helper()
	if _, err := c.Write(Encode(make([]byte, WireSize), m)); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// waitFor polls cond; tests stay bounded by the deadline, never by sleeps
// that assume a speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRegisterReceiveDeregister(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newService(t, WithRegisterer(reg))
	ep, err := s.Register(Registration{ID: "c1", PID: 1, MIGUUIDs: []string{"MIG-0a1b"}, PodNamespace: "ns", PodName: "p", ContainerName: "main"})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if ep.Socket != filepath.Join(ep.Dir, SocketName) {
		t.Fatalf("endpoint %+v: socket not in dir", ep)
	}
	fi, err := os.Stat(ep.Socket)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket %s: %v mode %v", ep.Socket, err, fi.Mode())
	}
	var mu sync.Mutex
	var fed []Sample
	s.OnSample(func(id string, smp Sample) {
		if id != "c1" {
			t.Errorf("sample for %q", id)
		}
		mu.Lock()
		fed = append(fed, smp)
		mu.Unlock()
	})
	c := dial(t, ep.Socket)
	send(t, c, Message{Seq: 1, Current: 100, Peak: 100, Allocs: 1})
	send(t, c, Message{Seq: 2, Current: 300, Peak: 300, Allocs: 2, Total: 5 << 30})
	send(t, c, Message{Seq: 3, Current: 200, Peak: 300, Allocs: 2, Frees: 1})
	waitFor(t, "3 samples", func() bool { return len(s.Samples("c1")) == 3 })
	got := s.Samples("c1")
	want := []struct{ used, peak, allocs uint64 }{{100, 100, 1}, {300, 300, 2}, {200, 300, 2}}
	for i, w := range want {
		if got[i].UsedBytes != w.used || got[i].PeakBytes != w.peak || got[i].RequestedBytes != w.used || got[i].Allocs != w.allocs || got[i].Source != SourceShim {
			t.Errorf("sample %d = %+v, want used %d peak %d allocs %d shim", i, got[i], w.used, w.peak, w.allocs)
		}
	}
	mu.Lock()
	if len(fed) != 3 || fed[2].UsedBytes != 200 {
		t.Errorf("OnSample saw %+v", fed)
	}
	mu.Unlock()
	top := s.Top()
	if len(top.Containers) != 1 {
		t.Fatalf("top = %+v", top)
	}
	e := top.Containers[0]
	if e.CurrentBytes != 200 || e.PeakBytes != 300 || e.CapacityBytes != 5<<30 || e.Samples != 3 || e.Processes != 1 || e.PodName != "p" || e.LastSample == nil {
		t.Errorf("top entry = %+v", e)
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) == 0 {
		t.Fatalf("Gather: %v (%d families)", err, len(mfs))
	}
	var ended []string
	s.OnDeregister(func(r Registration, peak uint64) {
		ended = append(ended, fmt.Sprintf("%s/%s %d", r.PodName, r.ID, peak))
	})
	if err := s.Deregister("c1"); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	if len(ended) != 1 || ended[0] != "p/c1 300" {
		t.Errorf("OnDeregister saw %v, want [p/c1 300]", ended)
	}
	if _, err := os.Stat(ep.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir %s still there after deregister: %v", ep.Dir, err)
	}
	if s.Samples("c1") != nil {
		t.Error("samples survive deregistration")
	}
	if err := s.Deregister("c1"); !errors.Is(err, ErrUnknownContainer) {
		t.Errorf("second Deregister: %v", err)
	}
}

func TestRegisterValidation(t *testing.T) {
	s := newService(t, WithMaxContainers(1))
	bad := []Registration{
		{ID: ""}, {ID: "../etc"}, {ID: "a/b"}, {ID: ".hidden"}, {ID: string(make([]byte, 65))},
		{ID: "ok", PID: -1}, {ID: "ok", MIGUUIDs: []string{"GPU-123"}}, {ID: "ok", MIGUUIDs: []string{"MIG-x/../../"}},
		{ID: "ok", PodName: "a b"}, {ID: "ok", ContainerName: "../x"},
	}
	for _, r := range bad {
		if _, err := s.Register(r); !errors.Is(err, ErrInvalid) {
			t.Errorf("Register(%+v) = %v, want ErrInvalid", r, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(s.cfg.stateDir, "containers")); len(ents) != 0 {
		t.Errorf("invalid registrations left %d entries", len(ents))
	}
	if _, err := s.Register(Registration{ID: "one"}); err != nil {
		t.Fatal(err)
	}
	ep1, err := s.Register(Registration{ID: "one", PID: 5})
	if err != nil {
		t.Fatalf("re-register is idempotent: %v", err)
	}
	if _, err := s.Register(Registration{ID: "two"}); !errors.Is(err, ErrTooManyContainers) {
		t.Errorf("over limit: %v", err)
	}
	if st := s.Stats(); st.RejectedRegistrations != uint64(len(bad))+1 {
		t.Errorf("rejected = %d, want %d", st.RejectedRegistrations, len(bad)+1)
	}
	if ep1.ID != "one" {
		t.Errorf("endpoint %+v", ep1)
	}
}

func TestBadDatagramsCountedAndDropped(t *testing.T) {
	s := newService(t)
	ep, err := s.Register(Registration{ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, ep.Socket)
	c.Write([]byte("garbage"))
	c.Write(make([]byte, 4096))
	send(t, c, Message{Seq: 5, Current: 10, Peak: 10})
	send(t, c, Message{Seq: 5, Current: 99, Peak: 99}) // replayed sequence
	waitFor(t, "all datagrams", func() bool {
		st := s.Stats()
		return st.Malformed+st.Oversized+st.Accepted+st.Stale == 4
	})
	st := s.Stats()
	if st.Malformed != 1 || st.Oversized != 1 || st.Accepted != 1 || st.Stale != 1 {
		t.Fatalf("stats %+v", st)
	}
	if got := s.Samples("c"); len(got) != 1 || got[0].UsedBytes != 10 {
		t.Fatalf("samples %+v", got)
	}
}

func TestProcessesExitAndBound(t *testing.T) {
	s := newService(t, WithMaxProcesses(2))
	if _, err := s.Register(Registration{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	c := s.get("c")
	b := func(m Message) []byte { return Encode(make([]byte, WireSize), m) }
	s.ingest(c, 100, b(Message{Seq: 1, Current: 10, Peak: 10}), false)
	s.ingest(c, 200, b(Message{Seq: 1, Current: 5, Peak: 7}), false)
	s.ingest(c, 300, b(Message{Seq: 1, Current: 1000, Peak: 1000}), false) // third process: over the bound
	if st := s.Stats(); st.TooManyProcesses != 1 {
		t.Fatalf("too many processes = %d", st.TooManyProcesses)
	}
	if top := s.Top().Containers[0]; top.ShimBytes != 15 || top.PeakBytes != 15 || top.Processes != 2 {
		t.Fatalf("two processes: %+v", top)
	}
	s.ingest(c, 100, b(Message{Seq: 2, Flags: FlagExit, Current: 10, Peak: 10}), false)
	if top := s.Top().Containers[0]; top.ShimBytes != 5 || top.Processes != 1 {
		t.Fatalf("after exit: %+v", top)
	}
	// The slot is free again.
	s.ingest(c, 300, b(Message{Seq: 1, Current: 1, Peak: 1}), false)
	if top := s.Top().Containers[0]; top.ShimBytes != 6 || top.Processes != 2 {
		t.Fatalf("after reuse: %+v", top)
	}
}

func TestRateLimit(t *testing.T) {
	s := newService(t, WithRate(1, 3))
	if _, err := s.Register(Registration{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	c := s.get("c")
	accepted := 0
	for i := 1; i <= 10; i++ {
		if s.ingest(c, 1, Encode(make([]byte, WireSize), Message{Seq: uint64(i)}), false) {
			accepted++
		}
	}
	// Burst 3 plus at most one token refilled during the loop.
	if accepted < 3 || accepted > 4 {
		t.Fatalf("accepted %d of 10 with burst 3 at 1/s", accepted)
	}
	if st := s.Stats(); st.RateLimited != uint64(10-accepted) {
		t.Fatalf("rate limited %d, want %d", st.RateLimited, 10-accepted)
	}
}

func TestPollerAndExitedContainers(t *testing.T) {
	alive := map[int]bool{10: true, 20: true, 30: true}
	var mu sync.Mutex
	s := newService(t, WithPIDCheck(func(pid int) bool { mu.Lock(); defer mu.Unlock(); return alive[pid] }))
	for _, r := range []Registration{
		{ID: "a", PID: 10, MIGUUIDs: []string{"MIG-1"}},
		{ID: "b", PID: 20, MIGUUIDs: []string{"MIG-1", "MIG-2"}},
		{ID: "gone", PID: 30, MIGUUIDs: []string{"MIG-1"}},
		{ID: "bad", PID: 10, MIGUUIDs: []string{"MIG-9"}},
		// Invisible to the agent from the start (another pid namespace):
		// never dropped by the pid check.
		{ID: "unseen", PID: 99, MIGUUIDs: []string{"MIG-2"}},
	} {
		if _, err := s.Register(r); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	delete(alive, 30) // "gone" exits after registering
	mu.Unlock()
	mem := gputest.Memory{"MIG-1": {100, 1000}, "MIG-2": {50, 500}}
	s.PollOnce(mem)
	mem["MIG-1"] = [2]uint64{80, 1000}
	s.PollOnce(mem)
	if s.get("gone") != nil {
		t.Error("container with dead pid still registered")
	}
	if s.get("unseen") == nil {
		t.Error("container whose pid the agent never saw was dropped")
	}
	a := s.Samples("a")
	if len(a) != 2 || a[1].UsedBytes != 80 || a[1].PeakBytes != 100 || a[1].Source != SourceNVML {
		t.Errorf("a samples %+v", a)
	}
	b := s.Samples("b")
	if len(b) != 2 || b[0].UsedBytes != 150 {
		t.Errorf("b samples %+v", b)
	}
	if len(s.Samples("bad")) != 0 || s.Stats().PollErrors != 2 {
		t.Errorf("bad instance: samples %v, poll errors %d", s.Samples("bad"), s.Stats().PollErrors)
	}
	for _, e := range s.Top().Containers {
		if e.ID == "b" && (e.CapacityBytes != 1500 || e.NVMLBytes != 130) {
			t.Errorf("top b = %+v", e)
		}
	}
}

func TestRestoreRebindsSockets(t *testing.T) {
	dir := shortDir(t)
	s1, err := New(WithLogger(quietlog.New()), WithStateDir(dir), WithPIDCheck(nil))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := s1.Register(Registration{ID: "keep", PID: 3, MIGUUIDs: []string{"MIG-1"}})
	if err != nil {
		t.Fatal(err)
	}
	s1.Close()
	// A stray directory must not stop the others.
	os.MkdirAll(filepath.Join(dir, "containers", "junk"), 0o755)
	// A container that exited while the agent was down is cleaned up, not
	// resurrected.
	s0, err := New(WithLogger(quietlog.New()), WithStateDir(dir), WithPIDCheck(func(int) bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s0.Register(Registration{ID: "exited", PID: 4}); err != nil {
		t.Fatal(err)
	}
	s0.Close()
	s2, err := New(WithLogger(quietlog.New()), WithStateDir(dir), WithPIDCheck(func(pid int) bool { return pid == 3 }))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	n, err := s2.Restore()
	if err != nil || n != 1 {
		t.Fatalf("Restore = %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "containers", "exited")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("exited container's directory survived Restore: %v", err)
	}
	c := dial(t, ep.Socket)
	send(t, c, Message{Seq: 1, Current: 42, Peak: 42})
	waitFor(t, "sample after restore", func() bool { return len(s2.Samples("keep")) == 1 })
}

// A container flooding its socket with garbage at full speed must not
// disturb another container's series.
func TestFloodIsolation(t *testing.T) {
	s := newService(t, WithRate(2000, 2000))
	epBad, _ := s.Register(Registration{ID: "bad"})
	epGood, err := s.Register(Registration{ID: "good"})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: epBad.Socket, Net: "unixgram"})
			if err != nil {
				return
			}
			defer c.Close()
			junk := make([]byte, 200)
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
				c.Write(junk)
			}
		}()
	}
	good := dial(t, epGood.Socket)
	const n = 500
	for i := 1; i <= n; i++ {
		send(t, good, Message{Seq: uint64(i), Current: uint64(i) * 10, Peak: uint64(i) * 10, Allocs: uint64(i)})
		if i%100 == 0 {
			time.Sleep(50 * time.Millisecond) // stay under the good container's own budget
		}
	}
	waitFor(t, "good series", func() bool { return len(s.Samples("good")) == n })
	close(stop)
	wg.Wait()
	for i, smp := range s.Samples("good") {
		if smp.UsedBytes != uint64(i+1)*10 {
			t.Fatalf("good sample %d = %d, want %d", i, smp.UsedBytes, (i+1)*10)
		}
	}
	if len(s.Samples("bad")) != 0 || s.Stats().Oversized == 0 {
		t.Fatalf("bad: %d samples, stats %+v", len(s.Samples("bad")), s.Stats())
	}
}

// A deep state dir plus a 64-character id (what podman and containerd use)
// is longer than sun_path allows; the socket must still work.
func TestLongSocketPath(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	s, err := New(WithLogger(quietlog.New()), WithStateDir(deep), WithPIDCheck(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := strings.Repeat("ab", 32)
	ep, err := s.Register(Registration{ID: id})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if len(ep.Socket) < 108 {
		t.Fatalf("path %d bytes: the test needs one over the limit", len(ep.Socket))
	}
	// Reach it the way the container does: through a short path to its
	// directory (here a symlink; in a container, the bind mount).
	short := filepath.Join(shortDir(t), "d")
	if err := os.Symlink(ep.Dir, short); err != nil {
		t.Fatal(err)
	}
	send(t, dial(t, filepath.Join(short, SocketName)), Message{Seq: 1, Current: 7, Peak: 7})
	waitFor(t, "sample", func() bool { return len(s.Samples(id)) == 1 })
}

// Only processes whose pid the kernel vouched for are pruned when that pid
// is gone; a pid the datagram merely claims is from another namespace and
// means nothing to the agent's kill(pid, 0).
func TestPruneOnlyVerifiedProcesses(t *testing.T) {
	s := newService(t, WithPIDCheck(func(pid int) bool { return pid == 1 }))
	if _, err := s.Register(Registration{ID: "c", PID: 1, MIGUUIDs: []string{"MIG-1"}}); err != nil {
		t.Fatal(err)
	}
	c := s.get("c")
	b := func(m Message) []byte { return Encode(make([]byte, WireSize), m) }
	s.ingest(c, 0, b(Message{PID: 5, Seq: 1, Current: 10, Peak: 10}), false)  // unverified
	s.ingest(c, 77, b(Message{PID: 6, Seq: 1, Current: 20, Peak: 20}), false) // verified, dead
	s.PollOnce(gputest.Memory{"MIG-1": {1, 2}})
	if top := s.Top().Containers[0]; top.Processes != 1 || top.ShimBytes != 10 {
		t.Fatalf("after prune: %+v", top)
	}
}

// For one container, OnSample sees samples one at a time and in ring order,
// even with the shim reader and the poller both producing; a subscriber may
// call Samples.
func TestOnSampleOrderedPerContainer(t *testing.T) {
	s := newService(t, WithRate(1e6, 1e6))
	ep, err := s.Register(Registration{ID: "c", MIGUUIDs: []string{"MIG-1"}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var fed []Sample
	inside := 0
	s.OnSample(func(id string, smp Sample) {
		mu.Lock()
		inside++
		if inside != 1 {
			t.Errorf("concurrent delivery for one container")
		}
		mu.Unlock()
		_ = s.Samples(id) // must not deadlock
		mu.Lock()
		fed = append(fed, smp)
		inside--
		mu.Unlock()
	})
	conn := dial(t, ep.Socket)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			s.PollOnce(gputest.Memory{"MIG-1": {1, 2}})
		}
	}()
	for i := 1; i <= 500; i++ {
		send(t, conn, Message{Seq: uint64(i), Current: uint64(i), Peak: uint64(i)})
	}
	<-done
	waitFor(t, "all samples", func() bool { mu.Lock(); defer mu.Unlock(); return len(fed) == 700 })
	ring := s.Samples("c")
	mu.Lock()
	defer mu.Unlock()
	for i := range ring {
		if ring[i] != fed[i] {
			t.Fatalf("delivery %d = %+v, ring has %+v", i, fed[i], ring[i])
		}
	}
}
