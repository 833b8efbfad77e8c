package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/plugin/podresources/podresourcestest"
)

type testEnv struct {
	cfg  Config
	node *simgpu.Node
	pods *podresourcestest.Fake
}

func newEnv(t testing.TB, spec string) *testEnv {
	t.Helper()
	dir := t.TempDir()
	node, err := simgpu.NewNode(spec, simgpu.WithRoot(filepath.Join(dir, "sim")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	return &testEnv{
		cfg: Config{StateDir: filepath.Join(dir, "state"), CDISpecDir: filepath.Join(dir, "cdi"),
			Socket: filepath.Join(dir, "a.sock"), AssignGrace: time.Nanosecond, TelemetryDir: filepath.Join(dir, "run")},
		node: node, pods: podresourcestest.NewFake(),
	}
}

func (e *testEnv) start(t testing.TB) *Agent {
	t.Helper()
	a, err := New(e.cfg, GPU{Node: e.node}, WithAssignments(e.pods), WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a
}

func specFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	return m
}

func TestAllocWritesSpecAndCheckpointFreeRemovesBoth(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	a := e.start(t)
	resp, err := a.Alloc(context.Background(), client.AllocRequest{Profile: "2g.10gb", Owner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.CDIName != "migpro.dev/mig="+resp.UUID || resp.Steps != 1 {
		t.Fatalf("alloc answer %+v", resp)
	}
	if got := specFiles(t, e.cfg.CDISpecDir); len(got) != 1 {
		t.Fatalf("spec files %v, want one", got)
	}
	cp, err := a.ckpt.Load()
	if err != nil || cp.Holders[resp.UUID].Owner != "local:me" {
		t.Fatalf("checkpoint %+v %v: want %s held by local:me", cp, err, resp.UUID)
	}
	if err := a.Free(context.Background(), resp.CDIName); err != nil {
		t.Fatal(err)
	}
	if got := specFiles(t, e.cfg.CDISpecDir); len(got) != 0 {
		t.Fatalf("spec files after free: %v", got)
	}
	if in, _ := e.node.DriverInstances(0); len(in) != 0 {
		t.Fatalf("driver still holds %+v", in)
	}
	if err := a.Free(context.Background(), resp.CDIName); !errors.Is(err, partitioner.ErrUnknownInstance) {
		t.Fatalf("second free: %v", err)
	}
	if _, err := a.Alloc(context.Background(), client.AllocRequest{Profile: "9g.9gb"}); !errors.Is(err, partitioner.ErrUnknownProfile) {
		t.Fatalf("unknown profile: %v", err)
	}
}

func TestRestartKeepsHoldersRemovesStaleSpecsAndRollsBackHalfMade(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	a := e.start(t)
	held, err := a.Alloc(context.Background(), client.AllocRequest{Profile: "3g.20gb"})
	if err != nil {
		t.Fatal(err)
	}
	idle, err := a.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}
	// What a crash can leave: an instance destroyed behind the agent's back
	// (its spec and checkpoint entry are stale), and a GI without its CI.
	gone, err := a.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.part.Release(idle.UUID); err != nil {
		t.Fatal(err)
	}
	a.persist()
	goneIn, _ := a.part.Find(gone.UUID)
	stale, _ := a.cdi.SpecPath(gone.UUID)
	dev := e.node.Devices()[0]
	if err := dev.DestroyComputeInstance(goneIn.GIID); err != nil {
		t.Fatal(err)
	}
	if err := dev.DestroyGPUInstance(goneIn.GIID); err != nil {
		t.Fatal(err)
	}
	profiles, _ := dev.Profiles()
	for _, p := range profiles {
		if p.Name == "1g.5gb" { // a half-made GI at the first free placement
			var err error
			for _, pl := range p.Placements {
				if _, err = dev.CreateGPUInstance(p.ID, pl); err == nil {
					break
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}

	b := e.start(t) // the restarted agent
	in, err := b.part.Find(held.UUID)
	if err != nil || in.State != partitioner.InUse || in.Owner != "local" {
		t.Fatalf("held instance after restart: %+v %v", in, err)
	}
	if in, err := b.part.Find(idle.UUID); err != nil || in.State != partitioner.Idle {
		t.Fatalf("idle instance after restart: %+v %v", in, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale spec %s survived the restart: %v", stale, err)
	}
	if cp, _ := b.ckpt.Load(); len(cp.Holders) != 1 {
		t.Fatalf("checkpoint after restart %+v, want only the live holder", cp.Holders)
	}
	if got := specFiles(t, e.cfg.CDISpecDir); len(got) != 2 {
		t.Fatalf("specs after restart %v, want the two live instances", got)
	}
	drv, _ := e.node.DriverInstances(0)
	if len(drv) != 2 {
		t.Fatalf("driver after restart holds %d instances, want 2 (half-made rolled back)", len(drv))
	}
}

func TestKubeletAllocationTrackedThroughPodResources(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.WarmPool = map[string]int{"1g.5gb": 2}
	a := e.start(t)
	a.Maintain(context.Background())
	devs := a.inv.Devices("1g.5gb")
	if len(devs) != 2 {
		t.Fatalf("warm pool advertised %d 1g.5gb, want 2", len(devs))
	}
	id := devs[0].ID
	if err := a.allocateCheck(context.Background(), "1g.5gb", []string{id}); err != nil {
		t.Fatal(err)
	}
	if err := a.allocateCheck(context.Background(), "1g.5gb", []string{id}); err != nil {
		t.Fatalf("the kubelet re-allocating its own device: %v", err)
	}
	cp, _ := a.ckpt.Load()
	if cp.Holders[id].Owner != ownerKubelet {
		t.Fatalf("kubelet allocation not checkpointed: %+v", cp)
	}
	// The pod runs: PodResources lists it; the warm pool tops up.
	e.pods.Assign(id, PodRef{Namespace: "ns", Name: "pod-a", Container: "c"})
	a.Maintain(context.Background())
	if st := a.Status(); !hasPod(st, id, "ns/pod-a/c") {
		t.Fatalf("status does not show the pod: %+v", st.Instances)
	}
	if n := a.idleCount("1g.5gb"); n != 2 {
		t.Fatalf("warm pool holds %d idle, want 2", n)
	}
	// Its space is needed but it is in use: the busy check refuses.
	if err := a.part.Destroy(context.Background(), id); !errors.Is(err, partitioner.ErrInstanceInUse) {
		t.Fatalf("destroying an in-use instance: %v", err)
	}
	// The pod is deleted: the instance goes back to idle.
	e.pods.Release(id)
	a.Maintain(context.Background())
	if in, _ := a.part.Find(id); in.State != partitioner.Idle {
		t.Fatalf("instance of a deleted pod: %+v, want idle", in)
	}
}

func TestIdleButAssignedIsNeverDestroyed(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	a := e.start(t)
	resp, _ := a.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
	a.part.Release(resp.UUID)
	e.pods.Assign(resp.UUID, PodRef{Namespace: "ns", Name: "p", Container: "c"})
	if err := a.part.Destroy(context.Background(), resp.UUID); !errors.Is(err, partitioner.ErrInstanceInUse) {
		t.Fatalf("destroy of an instance the kubelet assigned: %v", err)
	}
	e.pods.SetError(errors.New("kubelet down"))
	e.pods.Release(resp.UUID)
	if err := a.part.Destroy(context.Background(), resp.UUID); err == nil {
		t.Fatal("destroyed although the kubelet could not be asked")
	}
}

func TestXidMarksUnhealthyExceptIgnorable(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	a := e.start(t)
	r1, _ := a.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
	r2, _ := a.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.watchHealth(ctx)
	in1, _ := a.part.Find(r1.UUID)
	in2, _ := a.part.Find(r2.UUID)
	time.Sleep(50 * time.Millisecond) // let the watcher register
	// Events arrive in order: once the second is handled, so was the first.
	e.node.InjectXid(0, in2.GIID, 43) // an application's MMU fault: ignorable
	e.node.InjectXid(0, in1.GIID, 79) // GPU fallen off the bus
	waitFor(t, "instance unhealthy", func() bool { return !devHealthy(a, r1.UUID) })
	if !devHealthy(a, r2.UUID) {
		t.Fatal("an ignorable Xid marked its instance unhealthy")
	}
}

func hasPod(st client.Status, uuid, pod string) bool {
	for _, in := range st.Instances {
		if in.UUID == uuid && in.Pod == pod {
			return true
		}
	}
	return false
}

func devHealthy(a *Agent, uuid string) bool {
	for _, d := range a.inv.Devices("1g.5gb") {
		if d.ID == uuid {
			return d.Healthy
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestIdleTimeoutReapsButKeepsTheWarmPool(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.IdleTimeout = time.Millisecond
	e.cfg.WarmPool = map[string]int{"1g.5gb": 1}
	a := e.start(t)
	ctx := context.Background()
	a.Maintain(ctx) // the warm pool makes one idle 1g.5gb
	held, err := a.Alloc(ctx, client.AllocRequest{Profile: "2g.10gb"})
	if err != nil {
		t.Fatal(err)
	}
	spare, err := a.Alloc(ctx, client.AllocRequest{Profile: "3g.20gb"})
	if err != nil {
		t.Fatal(err)
	}
	a.part.Release(spare.UUID)
	a.markIdle(spare.UUID)
	time.Sleep(5 * time.Millisecond)
	a.Maintain(ctx)
	if _, err := a.part.Find(spare.UUID); !errors.Is(err, partitioner.ErrUnknownInstance) {
		t.Fatalf("idle 3g.20gb past the timeout still there: %v", err)
	}
	if _, err := a.part.Find(held.UUID); err != nil {
		t.Fatalf("in-use instance reaped: %v", err)
	}
	if n := a.idleCount("1g.5gb"); n != 1 {
		t.Fatalf("warm pool holds %d idle 1g.5gb after reaping, want 1", n)
	}
	if got := specFiles(t, e.cfg.CDISpecDir); len(got) != 2 {
		t.Fatalf("specs %v, want the held and the warm instance only", got)
	}
}

// A refused kubelet allocation gives back only what it took: an instance the
// kubelet already held stays in use.
func TestRefusedAllocationKeepsEarlierHolds(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.WarmPool = map[string]int{"1g.5gb": 2}
	a := e.start(t)
	a.Maintain(context.Background())
	devs := a.inv.Devices("1g.5gb")
	if len(devs) != 2 {
		t.Fatalf("warm pool made %d, want 2", len(devs))
	}
	held, fresh := devs[0].ID, devs[1].ID
	if err := a.allocateCheck(context.Background(), "1g.5gb", []string{held}); err != nil {
		t.Fatal(err)
	}
	if err := a.allocateCheck(context.Background(), "1g.5gb", []string{held, fresh, "MIG-unknown"}); err == nil {
		t.Fatal("allocation with an unknown device accepted")
	}
	if in, _ := a.part.Find(held); in.State != partitioner.InUse {
		t.Fatalf("the instance the kubelet held went back to %s", in.State)
	}
	if in, _ := a.part.Find(fresh); in.State != partitioner.Idle {
		t.Fatalf("the instance taken by the refused call is %s, want idle", in.State)
	}
}
