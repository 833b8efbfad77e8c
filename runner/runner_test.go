package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/predictor"
)

type runOut struct {
	res Result
	err error
}

type rig struct {
	j   *journal
	a   *fakeAgent
	e   *fakeEngine
	log *syncBuffer
	cfg Config
}

func newRig() *rig {
	j := &journal{}
	log := &syncBuffer{}
	return &rig{j: j, a: newFakeAgent(j), e: newFakeEngine(j), log: log, cfg: Config{
		ID: "job", Image: "img", Args: []string{"train", "--epochs=3"}, Profile: "1g.5gb",
		MaxRestarts: 2, Poll: 5 * time.Millisecond, StopTimeout: time.Second, Log: log,
	}}
}

func (r *rig) start(ctx context.Context, t *testing.T) <-chan runOut {
	t.Helper()
	rn, err := New(r.a, r.e, r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan runOut, 1)
	go func() {
		res, err := rn.Run(ctx)
		out <- runOut{res, err}
	}()
	return out
}

func wait(t *testing.T, out <-chan runOut) runOut {
	t.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("run did not end within 10s")
		return runOut{}
	}
}

func (r *rig) checkJournal(t *testing.T, want ...string) {
	t.Helper()
	if got := r.j.entries(); !slices.Equal(got, want) {
		t.Errorf("journal:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if h := r.a.holding(); len(h) != 0 {
		t.Errorf("instances left held: %v", h)
	}
}

// A run without a mark: the container's exit code is the run's, and its
// container and instance are gone afterwards.
func TestRunReturnsExitCodeAndCleansUp(t *testing.T) {
	r := newRig()
	out := r.start(context.Background(), t)
	c := r.e.waitStarted(t)
	if c.ID != "job" || c.Image != "img" || c.Device != "dev0" || !slices.Equal(c.Args, r.cfg.Args) {
		t.Errorf("started %+v", c)
	}
	r.e.exit("job", 3)
	o := wait(t, out)
	if o.err != nil || o.res != (Result{Code: 3, Restarts: 0, Profile: "1g.5gb"}) {
		t.Errorf("result %+v, %v", o.res, o.err)
	}
	r.checkJournal(t, "prepare img", "alloc 1g.5gb for job", "start job on dev0: train --epochs=3", "remove job", "free dev0")
}

// A mark stops the container, frees its instance, and starts it again from
// scratch as job-r1 on the recommended profile, which it then finishes on.
func TestMarkRestartsOnRecommendedProfile(t *testing.T) {
	r := newRig()
	out := r.start(context.Background(), t)
	r.e.waitStarted(t)
	r.a.mu.Lock()
	r.a.usage["job"] = Usage{Current: 4276 << 20, Capacity: 4864 << 20}
	r.a.mu.Unlock()
	r.a.mark("job", predictor.Mark{Profile: "1g.10gb", Forecast: 5100273664, TimeToOOM: 5.72})
	c := r.e.waitStarted(t)
	if c.ID != "job-r1" || c.Device != "dev1" {
		t.Fatalf("restarted as %+v, want job-r1 on dev1", c)
	}
	r.e.exit("job-r1", 0)
	o := wait(t, out)
	if o.err != nil || o.res != (Result{Code: 0, Restarts: 1, Profile: "1g.10gb"}) {
		t.Errorf("result %+v, %v", o.res, o.err)
	}
	r.checkJournal(t, "prepare img", "alloc 1g.5gb for job", "start job on dev0: train --epochs=3",
		"kill job terminated", "remove job", "free dev0",
		"alloc 1g.10gb for job", "start job-r1 on dev1: train --epochs=3", "remove job-r1", "free dev1")
	want := "migpro-lab run: predicted out of memory at 88% of 1g.5gb (4.2 GiB of 4.8 GiB used, forecast 4.8 GiB, " +
		"out of memory in about 5.7s): restarting on 1g.10gb (restart 1 of 2)\n"
	if !strings.Contains(r.log.String(), want) {
		t.Errorf("log %q\nlacks %q", r.log.String(), want)
	}
}

// Without a recommendation the run moves to the next larger profile the
// node offers; a second mark moves it again, and the bound then holds.
func TestRestartsFallBackToNextLargerAndStopAtTheBound(t *testing.T) {
	r := newRig()
	r.cfg.MaxRestarts = 2
	r.a.offered = []string{"1g.5gb", "1g.5gb+me", "2g.10gb", "1g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}
	out := r.start(context.Background(), t)
	r.e.waitStarted(t)
	r.a.mark("job", predictor.Mark{Forecast: 6 << 30})
	if c := r.e.waitStarted(t); c.ID != "job-r1" {
		t.Fatalf("first restart %+v", c)
	}
	r.a.mark("job-r1", predictor.Mark{Forecast: 12 << 30})
	if c := r.e.waitStarted(t); c.ID != "job-r2" {
		t.Fatalf("second restart %+v", c)
	}
	r.a.mark("job-r2", predictor.Mark{Profile: "7g.40gb", Forecast: 30 << 30})
	// The third mark must be read and answered without a restart.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(r.log.String(), "no restarts left") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r.e.exit("job-r2", 0)
	o := wait(t, out)
	if o.err != nil || o.res != (Result{Code: 0, Restarts: 2, Profile: "3g.20gb"}) {
		t.Errorf("result %+v, %v", o.res, o.err)
	}
	var allocs []string
	for _, l := range r.j.entries() {
		if strings.HasPrefix(l, "alloc") {
			allocs = append(allocs, l)
		}
	}
	if want := []string{"alloc 1g.5gb for job", "alloc 1g.10gb for job", "alloc 3g.20gb for job"}; !slices.Equal(allocs, want) {
		t.Errorf("allocs %v, want %v", allocs, want)
	}
	if !strings.Contains(r.log.String(), "predicted out of memory on 3g.20gb (forecast 30.0 GiB): no restarts left (--max-restarts 2); letting it run") {
		t.Errorf("log %q", r.log.String())
	}
	if h := r.a.holding(); len(h) != 0 {
		t.Errorf("held %v", h)
	}
}

// With no restarts allowed, or no larger profile, a mark is reported and
// the container runs on untouched.
func TestMarkWithoutRestartLetsItRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     int
		d       predictor.Mark
		offered []string
		why     string
	}{
		{"no restarts", 0, predictor.Mark{Profile: "1g.10gb"}, nil, "no restarts left (--max-restarts 0)"},
		{"already largest", 1, predictor.Mark{Profile: "1g.5gb"}, nil, "1g.5gb is already the largest profile"},
		{"nothing larger", 1, predictor.Mark{}, []string{"1g.5gb"}, "nothing on this node is larger than 1g.5gb"},
		{"profiles unknown", 1, predictor.Mark{}, nil, "the node's profiles are unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig()
			r.cfg.MaxRestarts = tc.max
			r.a.offered = tc.offered
			out := r.start(context.Background(), t)
			r.e.waitStarted(t)
			r.a.mark("job", tc.d)
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(r.log.String(), "letting it run") && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if !strings.Contains(r.log.String(), tc.why) {
				t.Errorf("log %q lacks %q", r.log.String(), tc.why)
			}
			r.e.exit("job", 0)
			o := wait(t, out)
			if o.err != nil || o.res.Restarts != 0 || o.res.Code != 0 {
				t.Errorf("result %+v, %v", o.res, o.err)
			}
			r.checkJournal(t, "prepare img", "alloc 1g.5gb for job", "start job on dev0: train --epochs=3", "remove job", "free dev0")
		})
	}
}

// A mark for another container, or for an earlier run's id, is not ours.
func TestMarksOfOtherContainersAreIgnored(t *testing.T) {
	r := newRig()
	r.a.mark("other", predictor.Mark{Profile: "7g.40gb"})
	r.a.mark("jobx", predictor.Mark{Profile: "7g.40gb"})
	out := r.start(context.Background(), t)
	r.e.waitStarted(t)
	waitReads(t, r.a, 5)
	r.e.exit("job", 0)
	if o := wait(t, out); o.err != nil || o.res.Restarts != 0 {
		t.Errorf("result %+v, %v", o.res, o.err)
	}
}

func waitReads(t *testing.T, a *fakeAgent, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		a.mu.Lock()
		reads := a.reads
		a.mu.Unlock()
		if reads >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("marks read %d times, want %d", reads, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// An interrupt stops the container (SIGTERM, then SIGKILL when it ignores
// it), removes it and frees its instance.
func TestInterruptStopsRemovesAndFrees(t *testing.T) {
	r := newRig()
	r.e.ignoreTERM = true
	r.cfg.StopTimeout = 30 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	out := r.start(ctx, t)
	r.e.waitStarted(t)
	cancel()
	o := wait(t, out)
	if !errors.Is(o.err, ErrInterrupted) || o.res.Code != 137 {
		t.Errorf("result %+v, %v; want code 137 and ErrInterrupted", o.res, o.err)
	}
	r.checkJournal(t, "prepare img", "alloc 1g.5gb for job", "start job on dev0: train --epochs=3",
		"kill job terminated", "kill job killed", "remove job", "free dev0")
	if !strings.Contains(r.log.String(), "did not stop within 30ms: SIGKILL") {
		t.Errorf("log %q", r.log.String())
	}
}

// When the larger instance cannot be had, the run fails clearly with
// nothing left behind.
func TestRestartAllocFailureLeavesNothing(t *testing.T) {
	r := newRig()
	r.a.allocErr["1g.10gb"] = errors.New("1g.10gb: must wait for free capacity")
	out := r.start(context.Background(), t)
	r.e.waitStarted(t)
	r.a.mark("job", predictor.Mark{Profile: "1g.10gb"})
	o := wait(t, out)
	if o.err == nil || !strings.Contains(o.err.Error(), "restart on 1g.10gb: 1g.10gb: must wait") {
		t.Errorf("error %v", o.err)
	}
	r.checkJournal(t, "prepare img", "alloc 1g.5gb for job", "start job on dev0: train --epochs=3",
		"kill job terminated", "remove job", "free dev0", "alloc 1g.10gb for job")
}

// Bad images take no instance; a failed start gives its instance back and
// removes nothing by id (the engine cleans up its own half-made container).
func TestFailuresBeforeRunning(t *testing.T) {
	r := newRig()
	r.e.prepareErr = errors.New("not found")
	o := wait(t, r.start(context.Background(), t))
	if o.err == nil || o.err.Error() != "image img: not found" {
		t.Errorf("error %v", o.err)
	}
	r.checkJournal(t, "prepare img")

	r = newRig()
	r.e.startErr = errors.New("no such CDI device")
	o = wait(t, r.start(context.Background(), t))
	if o.err == nil || o.err.Error() != "start container job on 1g.5gb: no such CDI device" {
		t.Errorf("error %v", o.err)
	}
	r.checkJournal(t, "prepare img", "alloc 1g.5gb for job", "start job on dev0: train --epochs=3", "free dev0")

	r = newRig()
	r.a.allocErr["1g.5gb"] = errors.New("unknown profile")
	o = wait(t, r.start(context.Background(), t))
	if o.err == nil || o.err.Error() != "unknown profile" {
		t.Errorf("error %v", o.err)
	}
	r.checkJournal(t, "prepare img", "alloc 1g.5gb for job")
}

// An agent that cannot answer does not stop the container: the failure is
// reported once, and the recovery once.
func TestUnreadableMarksKeepTheContainerRunning(t *testing.T) {
	r := newRig()
	r.a.marksErr = errors.New("connection refused")
	out := r.start(context.Background(), t)
	r.e.waitStarted(t)
	time.Sleep(50 * time.Millisecond) // about ten failed polls
	r.a.mu.Lock()
	r.a.marksErr = nil
	r.a.mu.Unlock()
	waitReads(t, r.a, 1)
	r.e.exit("job", 0)
	if o := wait(t, out); o.err != nil || o.res.Code != 0 {
		t.Errorf("result %+v, %v", o.res, o.err)
	}
	log := r.log.String()
	if strings.Count(log, "cannot read the agent's predictions") != 1 || strings.Count(log, "reading the agent's predictions again") != 1 {
		t.Errorf("log %q", log)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	good := Config{ID: "a", Image: "i", Profile: "1g.5gb"}
	for _, mod := range []func(*Config){
		func(c *Config) { c.ID = "" }, func(c *Config) { c.Image = "" }, func(c *Config) { c.Profile = "" },
		func(c *Config) { c.MaxRestarts = -1 }, func(c *Config) { c.Poll = -1 }, func(c *Config) { c.StopTimeout = -1 },
	} {
		c := good
		mod(&c)
		if _, err := New(nil, nil, c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	if _, err := New(nil, nil, good); err != nil {
		t.Errorf("New(%+v): %v", good, err)
	}
}

// A container that ends while its mark is being read is not restarted.
func TestEndedContainerIsNotRestarted(t *testing.T) {
	r := newRig()
	r.a.mark("job", predictor.Mark{Profile: "1g.10gb"})
	r.a.onMarks = func() { r.e.exit("job", 0) }
	o := wait(t, r.start(context.Background(), t))
	if o.err != nil || o.res != (Result{Code: 0, Profile: "1g.5gb"}) {
		t.Fatalf("result %+v, %v", o.res, o.err)
	}
	r.checkJournal(t, "prepare img", "alloc 1g.5gb for job", "start job on dev0: train --epochs=3", "remove job", "free dev0")
}
