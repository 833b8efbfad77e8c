package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/telemetry"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// TestGrowingContainerIsMarkedBeforeOOM drives the whole online path through
// real entry points: a container registers over the local API as the hook
// does, its instance's memory grows on the simulated GPU, the agent's NVML
// poller feeds the predictor, and the mark (with a larger profile) appears on
// /v1/marks before the memory reaches the instance's capacity. A neighbour
// with flat memory is never marked.
func TestGrowingContainerIsMarkedBeforeOOM(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.PollEvery = 5 * time.Millisecond
	e.cfg.Predictor = compressedTime
	a := e.start(t)
	marked := make(chan Mark, 4)
	a.OnMark(func(m Mark) { marked <- m })
	c := runAgent(t, a)
	ctx := context.Background()
	grow, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}
	flat, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}
	for id, uuid := range map[string]string{"grower": grow.UUID, "steady": flat.UUID} {
		register(t, a.cfg.Socket, id, uuid)
	}
	gi := func(uuid string) int { in, _ := a.part.Find(uuid); return in.GIID }
	_, capacity, err := a.InstanceMemory(grow.UUID)
	if err != nil {
		t.Fatal(err)
	}
	markedAt := rampUntilMarked(t, e, a, grow.UUID, "grower", func() {
		e.node.SetInstanceMemoryUsed(0, gi(flat.UUID), capacity/3)
	})
	marks := getMarks(t, a.cfg.Socket)
	d, ok := marks["grower"]
	if !ok || markedAt == 0 {
		t.Fatalf("growing container not marked before its instance filled up (marks: %+v)", marks)
	}
	if _, bad := marks["steady"]; bad {
		t.Fatalf("flat container marked: %+v", marks["steady"])
	}
	if d.Profile == "" || d.Profile == "1g.5gb" {
		t.Fatalf("mark recommends %q, want a larger profile", d.Profile)
	}
	t.Logf("marked at %.0f%% of capacity, recommending %s", 100*float64(markedAt)/float64(capacity), d.Profile)
	select {
	case m := <-marked:
		if m.Container.ID != "grower" || m.UUID != grow.UUID || m.Profile != "1g.5gb" || m.Decision.Profile != d.Profile {
			t.Fatalf("OnMark got %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnMark subscriber not called")
	}
}

// compressedTime reads the test's three-second ramp as the agent reads a
// minutes-long one: 20 ms bins, no loading grace.
func compressedTime(c predictor.Config) predictor.Config {
	c.Bin = 0.02
	return c
}

// rampUntilMarked grows an instance's used memory from 10% to 100% of its
// capacity over three seconds, as the NVML poller sees it, and returns the
// used bytes at which container id was marked (0 if it never was). each runs
// at every step.
func rampUntilMarked(t *testing.T, e *testEnv, a *Agent, uuid, id string, each func()) uint64 {
	t.Helper()
	in, _ := a.part.Find(uuid)
	_, capacity, err := a.InstanceMemory(uuid)
	if err != nil {
		t.Fatal(err)
	}
	const rampFor = 3 * time.Second
	start := time.Now()
	for time.Since(start) < rampFor {
		frac := 0.1 + 0.9*float64(time.Since(start))/float64(rampFor)
		used := uint64(frac * float64(capacity))
		e.node.SetInstanceMemoryUsed(in.GPU, in.GIID, used)
		if each != nil {
			each()
		}
		if _, ok := getMarks(t, a.cfg.Socket)[id]; ok {
			return used
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}

func register(t *testing.T, socket, id, uuid string) {
	t.Helper()
	registerWith(t, socket, map[string]any{"id": id, "pid": os.Getpid(), "migUUIDs": []string{uuid}})
}

// registerWith registers a container as the hook does and returns its
// telemetry endpoint.
func registerWith(t *testing.T, socket string, reg map[string]any) telemetryapi.Endpoint {
	t.Helper()
	id := reg["id"]
	body, _ := json.Marshal(reg)
	resp, err := unixHTTP(socket).Post("http://agent/v1/containers", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ep telemetryapi.Endpoint
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&ep) != nil || ep.Socket == "" {
		t.Fatalf("register %s: %s, endpoint %+v", id, resp.Status, ep)
	}
	return ep
}

func getMarks(t *testing.T, socket string) map[string]predictor.Decision {
	t.Helper()
	resp, err := unixHTTP(socket).Get("http://agent/v1/marks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]predictor.Decision
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(fmt.Errorf("decode marks: %w", err))
	}
	return m
}

func unixHTTP(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
}

// When a container ends (its poststop hook deregisters it), its predictor is
// dropped and its peak lands in the estimator's history under its workload.
func TestContainerEndRecordsWorkloadPeak(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.PollEvery = 5 * time.Millisecond
	e.cfg.Predictor = compressedTime
	a := e.start(t)
	c := runAgent(t, a)
	ctx := context.Background()
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: "train-llama"})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := a.part.Find(r.UUID)
	e.node.SetInstanceMemoryUsed(0, in.GIID, 3<<30)
	register(t, a.cfg.Socket, "ctr1", r.UUID)
	waitFor(t, "a polled sample", func() bool { return len(a.watch.svc.Samples("ctr1")) > 0 })
	req, _ := http.NewRequest(http.MethodDelete, "http://agent/v1/containers/ctr1", nil)
	resp, err := unixHTTP(a.cfg.Socket).Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("deregister: %v %v", resp, err)
	}
	h, err := estimator.OpenHistory(a.historyPath())
	if err != nil {
		t.Fatal(err)
	}
	if peak, ok := h.Peak("local/train-llama"); !ok || peak != 3<<30 {
		t.Fatalf("history peak %d %v, want 3 GiB for local/train-llama", peak, ok)
	}
	if _, tracked := a.watch.tracker.Stop("ctr1"); tracked {
		t.Fatal("predictor still tracking an ended container")
	}
}

// agentFedByTest runs an agent whose telemetry samples the test feeds
// itself (the poller waits an hour), on compressed predictor time, with
// one 1g.5gb allocated for owner.
func agentFedByTest(t *testing.T, owner string) (*Agent, client.AllocResponse) {
	t.Helper()
	e := newEnv(t, "a100-40gb")
	e.cfg.PollEvery = time.Hour
	e.cfg.Predictor = compressedTime
	a := e.start(t)
	c := runAgent(t, a)
	r, err := c.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb", Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return a, r
}

// A container that ends while its first sample is starting its predictor
// (the poststop hook racing a poll) leaves neither a predictor nor any
// per-container state behind, whichever side wins.
func TestContainerEndRacingFirstSampleLeavesNothing(t *testing.T) {
	a, r := agentFedByTest(t, "race")
	for i := range 300 {
		id := fmt.Sprintf("ctr%d", i)
		register(t, a.cfg.Socket, id, r.UUID)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			now := time.Now()
			a.watch.onUsage(id, telemetry.Usage{At: now, Since: now, NVMLBytes: 1 << 30})
		}()
		go func() {
			defer wg.Done()
			if err := a.watch.svc.Deregister(id); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		a.watch.mu.Lock()
		_, started := a.watch.started[id]
		a.watch.mu.Unlock()
		if _, tracked := a.watch.tracker.Stop(id); tracked || started {
			t.Fatalf("round %d: after the end, predictor tracked %v, start state kept %v", i, tracked, started)
		}
	}
}

// A registered container whose predictor cannot start (its instance is
// gone) is tried on its first sample only: five shim samples over its
// telemetry socket give one warning, not one per sample.
func TestPredictorNotStartedWarnsOnce(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.PollEvery = time.Hour // only the shim's samples count here
	log, hook := test.NewNullLogger()
	a, err := New(e.cfg, GPU{Node: e.node}, WithAssignments(e.pods), WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	c := runAgent(t, a)
	ctx := context.Background()
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	ep := registerWith(t, a.cfg.Socket, map[string]any{"id": "ctr", "pid": os.Getpid(), "migUUIDs": []string{r.UUID}})
	if err := c.Free(ctx, r.CDIName); err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: ep.Socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, telemetry.WireSize)
	for seq := uint64(1); seq <= 5; seq++ {
		m := telemetry.Message{Seq: seq, PID: uint32(os.Getpid()), Current: seq << 20, Peak: seq << 20, Allocs: seq}
		if _, err := conn.Write(telemetry.Encode(buf, m)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // a new time for each sample
	}
	waitFor(t, "five accepted samples", func() bool { return a.watch.svc.Stats().Accepted >= 5 })
	time.Sleep(100 * time.Millisecond) // let the last sample's handling finish
	n := 0
	for _, en := range hook.AllEntries() {
		if en.Message == "predictor not started" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d \"predictor not started\" warnings for five samples, want 1", n)
	}
}

func TestWorkloadKeyStripsGeneratedSuffixes(t *testing.T) {
	for name, want := range map[string]string{
		"web-7d9f8b6c4-x2x1z": "ns/web", "train-abcde": "ns/train", "solo": "ns/solo",
	} {
		if got := workloadKey(telemetry.Registration{PodNamespace: "ns", PodName: name}, ""); got != want {
			t.Errorf("%s -> %q, want %q", name, got, want)
		}
	}
	if got := workloadKey(telemetry.Registration{}, "local:job1"); got != "local/job1" {
		t.Errorf("local owner -> %q", got)
	}
	if got := workloadKey(telemetry.Registration{}, "kubelet"); got != "" {
		t.Errorf("no key expected, got %q", got)
	}
}

// endsWhileJudging ends a container between the predictor's mark and the
// watch recording it, as a poststop hook may when it races a sample.
type endsWhileJudging struct {
	predictors
	end    func()
	marked bool
}

func (p *endsWhileJudging) Observe(id string, s predictor.Sample) (predictor.Decision, bool) {
	d, marked := p.predictors.Observe(id, s)
	if marked && !p.marked {
		p.marked = true
		p.end()
	}
	return d, marked
}

// A mark that lands after its container ended has no one to move: it is
// neither recorded nor listed on /v1/marks, and nothing of the container
// stays behind.
func TestMarkAfterTheContainerEndedIsDropped(t *testing.T) {
	a, r := agentFedByTest(t, "late")
	_, capacity, err := a.InstanceMemory(r.UUID)
	if err != nil {
		t.Fatal(err)
	}
	register(t, a.cfg.Socket, "ctr", r.UUID)
	racer := &endsWhileJudging{predictors: a.watch.tracker, end: func() {
		if err := a.watch.svc.Deregister("ctr"); err != nil {
			t.Error(err)
		}
	}}
	a.watch.tracker = racer
	// A ramp from 10% to 100% of the instance over three seconds of sample
	// time, one sample per 20 ms bin, marks well before the end.
	t0 := time.Now()
	for i := 0; i <= 150 && !racer.marked; i++ {
		used := uint64((0.1 + 0.9*float64(i)/150) * float64(capacity))
		a.watch.onUsage("ctr", telemetry.Usage{At: t0.Add(time.Duration(i) * 20 * time.Millisecond), Since: t0, NVMLBytes: used})
	}
	if !racer.marked {
		t.Fatal("the ramp was never marked: the race was not exercised")
	}
	if d, ok := getMarks(t, a.cfg.Socket)["ctr"]; ok {
		t.Fatalf("/v1/marks lists the ended container: %+v", d)
	}
	a.watch.mu.Lock()
	_, started := a.watch.started["ctr"]
	a.watch.mu.Unlock()
	if started {
		t.Fatal("per-container state kept after the end")
	}
}

// Subscribers that join between New and Run (the cluster link does, from
// Run) hear of every container: telemetry starts when the agent opens, and
// takes them over.
func TestSubscribersBeforeOpenAreKept(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	a, err := New(e.cfg, GPU{Node: e.node}, WithAssignments(e.pods), WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	failOpen, ended := make(chan string, 4), make(chan string, 4)
	a.OnFailOpen(func(r telemetry.Registration, _ string) { failOpen <- r.ID })
	a.OnContainerEnd(func(e End) { ended <- e.Container.ID })
	if err := a.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c-open", "c-end"} {
		if _, err := a.watch.svc.Register(telemetry.Registration{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.watch.svc.ReportFailOpen("c-open", "no shim"); err != nil {
		t.Fatal(err)
	}
	if err := a.watch.svc.Deregister("c-end"); err != nil {
		t.Fatal(err)
	}
	// A fail-open ends the registration too: both containers end.
	var heard []string
	for _, ch := range []chan string{failOpen, ended, ended} {
		select {
		case id := <-ch:
			heard = append(heard, id)
		case <-time.After(5 * time.Second):
			t.Fatalf("heard only %v", heard)
		}
	}
	if heard[0] != "c-open" || !slices.Contains(heard[1:], "c-open") || !slices.Contains(heard[1:], "c-end") {
		t.Errorf("heard %v: want the fail-open of c-open, then the ends of c-open and c-end", heard)
	}
}
