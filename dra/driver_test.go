package dra_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/dra"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/partitioner"
)

const nodeName = "node-1"

// env is one node: a simulated GPU, an agent and the fake API server its
// DRA driver talks to, with the kubelet's side played by a gRPC client on
// the driver's real socket.
type env struct {
	t    testing.TB
	dir  string
	root string // the kubelet's root: short, for unix socket paths
	node *simgpu.Node
	cs   *fake.Clientset
	cfg  agent.Config
	log  *logrus.Logger

	agent  *agent.Agent
	stop   func()
	client drapb.DRAPluginClient
}

func newEnv(t testing.TB, spec string) *env {
	t.Helper()
	dir := t.TempDir()
	root, err := os.MkdirTemp("", "dra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	node, err := simgpu.NewNode(spec, simgpu.WithRoot(filepath.Join(dir, "sim")), simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}})
	// The API server names objects created with generateName and gives
	// every write a new resourceVersion; the fake does neither. Without
	// versions the slice controller cannot tell its own last write from the
	// older copy its informer still holds: a write that restores what that
	// copy shows (an unprepare right after a prepare) looks done, and the
	// pool is fixed only at the informer's 30 s resync.
	var n, rv int
	cs.PrependReactor("*", "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		w, ok := a.(interface{ GetObject() runtime.Object })
		if !ok || (a.GetVerb() != "create" && a.GetVerb() != "update") {
			return false, nil, nil
		}
		o := w.GetObject().(*resourceapi.ResourceSlice)
		if o.Name == "" {
			n++
			o.Name = o.GenerateName + strconv.Itoa(n)
		}
		rv++
		o.ResourceVersion = strconv.Itoa(rv)
		return false, nil, nil
	})
	cs.Resources = []*metav1.APIResourceList{{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "resourceslices"}, {Name: "resourceclaims"}}}}
	log := quietlog.New()
	return &env{t: t, dir: dir, root: root, node: node, cs: cs, log: log,
		cfg: agent.Config{StateDir: filepath.Join(dir, "state"), CDISpecDir: filepath.Join(dir, "cdi"), Socket: filepath.Join(root, "a.sock"),
			AssignGrace: time.Nanosecond, TelemetryDir: agent.TelemetryOff, NodeName: nodeName}}
}

// start runs the agent with its DRA driver until the test ends or stop.
func (e *env) start() {
	t := e.t
	t.Helper()
	a := e.open(agent.WithCluster(dra.Link(nil, dra.WithClient(e.cs), dra.WithKubeletRoot(e.root))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	e.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent: %v", err)
			}
		}
	}
	t.Cleanup(e.stop)
	e.agent = a
	sock := filepath.Join(e.root, "plugins", dra.DriverName, "dra.sock")
	// The socket file of an earlier run may still be there: wait until this
	// run's server accepts a connection, not until the file exists.
	waitFor(t, "the DRA socket", func() bool {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	})
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	e.client = drapb.NewDRAPluginClient(conn)
	waitFor(t, "the first ResourceSlices", func() bool {
		sl := e.slices()
		return len(sl) > 0 && int64(len(sl)) == sl[0].Spec.Pool.ResourceSliceCount
	})
}

// open wires the agent on the env's GPUs and state; Run opens it.
func (e *env) open(opts ...agent.Option) *agent.Agent {
	e.t.Helper()
	a, err := agent.New(e.cfg, agent.GPU{Node: e.node}, append([]agent.Option{agent.WithLogger(e.log)}, opts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// sliceWriteBytes counts the ResourceSlice creates and updates the fake
// API server took and the bytes (protobuf) of the objects written.
func (e *env) sliceWriteBytes() (n, size int) {
	for _, a := range e.cs.Actions() {
		if a.GetResource().Resource != "resourceslices" || (a.GetVerb() != "create" && a.GetVerb() != "update") {
			continue
		}
		n++
		if w, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if o, ok := w.GetObject().(*resourceapi.ResourceSlice); ok {
				size += o.Size()
			}
		}
	}
	return n, size
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// slices lists the node's published slices in their order (by name, whose
// prefix is the index).
func (e *env) slices() []resourceapi.ResourceSlice {
	l, err := e.cs.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	items := l.Items
	for i := range items {
		for j := i + 1; j < len(items); j++ {
			if items[j].Name < items[i].Name {
				items[i], items[j] = items[j], items[i]
			}
		}
	}
	return items
}

// devices lists the published devices in the order the scheduler tries
// them.
func (e *env) devices() []resourceapi.Device {
	var out []resourceapi.Device
	for _, s := range e.slices() {
		out = append(out, s.Spec.Devices...)
	}
	return out
}

// firstOf is the first published device of a profile: the scheduler's
// first fit for a claim on it.
func (e *env) firstOf(profile string) string {
	for _, d := range e.devices() {
		if *d.Attributes["profile"].StringValue == profile && len(d.Taints) == 0 {
			return d.Name
		}
	}
	return ""
}

// claim stores an allocated claim of the given devices, as the scheduler
// leaves it.
func (e *env) claim(name string, devices ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	alloc := &resourceapi.AllocationResult{}
	for i, d := range devices {
		alloc.Devices.Results = append(alloc.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "mig" + string(rune('a'+i)), Driver: dra.DriverName, Pool: nodeName, Device: d})
	}
	c.Status.Allocation = alloc
	c, err := e.cs.ResourceV1().ResourceClaims("default").Create(context.Background(), c, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) prepare(c *resourceapi.ResourceClaim) *drapb.NodePrepareResourceResponse {
	e.t.Helper()
	resp, err := e.client.NodePrepareResources(context.Background(), &drapb.NodePrepareResourcesRequest{
		Claims: []*drapb.Claim{{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}}})
	if err != nil {
		e.t.Fatalf("NodePrepareResources: %v", err)
	}
	return resp.Claims[string(c.UID)]
}

func (e *env) unprepare(c *resourceapi.ResourceClaim) string {
	e.t.Helper()
	resp, err := e.client.NodeUnprepareResources(context.Background(), &drapb.NodeUnprepareResourcesRequest{
		Claims: []*drapb.Claim{{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}}})
	if err != nil {
		e.t.Fatalf("NodeUnprepareResources: %v", err)
	}
	return resp.Claims[string(c.UID)].GetError()
}

// instanceAt is the instance of a profile at a GPU and slot, if any.
func (e *env) instanceAt(profile string, gpuIndex, start int) (partitioner.Instance, bool) {
	for _, in := range e.agent.Partitioner().Instances() {
		if in.Profile == profile && in.GPU == gpuIndex && in.Placement.Start == start {
			return in, true
		}
	}
	return partitioner.Instance{}, false
}

func TestPublishesCountersAndEveryPlacement(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.start()
	sl := e.slices()
	if len(sl) != 2 || len(sl[0].Spec.SharedCounters) != 1 || len(sl[0].Spec.Devices) != 0 {
		t.Fatalf("want a counter slice then a device slice, got %d slices: %+v", len(sl), sl)
	}
	cs := sl[0].Spec.SharedCounters[0]
	if cs.Name != "gpu0" || len(cs.Counters) < 9 || val(cs.Counters["slices"]) != 7 || val(cs.Counters["slot7"]) != 1 {
		t.Errorf("counter set: %+v", cs)
	}
	devs := e.devices()
	// 1g.5gb x7, 1g.10gb x4, 2g.10gb x3, 3g.20gb x2, 4g.20gb, 7g.40gb (+me profiles where offered).
	if len(devs) < 18 {
		t.Fatalf("%d devices, want every profile at every placement (>= 18)", len(devs))
	}
	d := devs[0]
	for _, a := range []resourceapi.QualifiedName{"profile", "slices", "memoryMiB", "model", "parentUUID"} {
		if _, ok := d.Attributes[a]; !ok {
			t.Errorf("device %s lacks attribute %s", d.Name, a)
		}
	}
	if *d.Attributes["profile"].StringValue != "1g.5gb" {
		t.Errorf("first device is %s, want the smallest profile first", d.Name)
	}
	if q := d.Capacity["memory"].Value; q.Value() < 4<<30 {
		t.Errorf("memory capacity %s", q.String())
	}
	seven := devs[len(devs)-1]
	if *seven.Attributes["profile"].StringValue != "7g.40gb" || len(seven.ConsumesCounters[0].Counters) != 9 {
		t.Errorf("last device %s consumes %v, want 7g.40gb on all 8 slots and the slices", seven.Name, seven.ConsumesCounters)
	}
}

func TestFirstFitIsMigprosChoice(t *testing.T) {
	e := newEnv(t, "a100-40gb:2")
	e.start()
	for _, profile := range []string{"1g.5gb", "2g.10gb", "3g.20gb"} {
		plan, err := e.agent.Partitioner().Plan(profile)
		if err != nil {
			t.Fatal(err)
		}
		st := plan.Steps[len(plan.Steps)-1]
		want := "gpu" + itoa(st.GPU) + "-" + strings.ReplaceAll(profile, ".", "-") + "-s" + itoa(st.Placement.Start)
		if got := e.firstOf(profile); got != want {
			t.Errorf("%s: the scheduler's first fit is %s, migpro would make %s (%s)", profile, got, want, plan)
		}
	}
	// After a claim is prepared, the slices are republished: the next
	// first fit of the profile is migpro's next choice.
	first := e.firstOf("1g.5gb")
	c := e.claim("one", first)
	if r := e.prepare(c); r.Error != "" {
		t.Fatal(r.Error)
	}
	waitFor(t, "a republish", func() bool { return e.firstOf("1g.5gb") != first })
	plan, _ := e.agent.Partitioner().Plan("1g.5gb")
	st := plan.Steps[len(plan.Steps)-1]
	if got, want := e.firstOf("1g.5gb"), "gpu"+itoa(st.GPU)+"-1g-5gb-s"+itoa(st.Placement.Start); got != want {
		t.Errorf("after one claim: first fit %s, migpro %s", got, want)
	}
}

func val(c resourceapi.Counter) int64 { return c.Value.Value() }

func itoa(n int) string { return strconv.Itoa(n) }

// lines is a log hook that counts messages.
type lines struct {
	mu  sync.Mutex
	msg []string
}

func (l *lines) Levels() []logrus.Level { return logrus.AllLevels }
func (l *lines) Fire(e *logrus.Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msg = append(l.msg, e.Message)
	return nil
}

func (l *lines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msg {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

func TestPrepareMakesTheAllocatedPlacementAndIsIdempotent(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.start()
	c := e.claim("a", "gpu0-2g-10gb-s2")
	r := e.prepare(c)
	if r.Error != "" || len(r.Devices) != 1 {
		t.Fatalf("prepare: %+v", r)
	}
	in, ok := e.instanceAt("2g.10gb", 0, 2)
	if !ok || in.State != partitioner.InUse {
		t.Fatalf("no in-use 2g.10gb at slot 2: %v", e.agent.Partitioner().Instances())
	}
	dev := r.Devices[0]
	if want := "migpro.dev/mig=" + in.UUID; len(dev.CdiDeviceIds) != 1 || dev.CdiDeviceIds[0] != want || dev.DeviceName != "gpu0-2g-10gb-s2" || dev.PoolName != nodeName {
		t.Errorf("device %+v, want CDI ID %s", dev, want)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.CDISpecDir)); err != nil {
		t.Fatal(err)
	}
	specs, _ := filepath.Glob(filepath.Join(e.cfg.CDISpecDir, "*.json"))
	if len(specs) != 1 {
		t.Errorf("CDI specs %v, want the instance's", specs)
	}
	again := e.prepare(c)
	if again.Error != "" || again.Devices[0].CdiDeviceIds[0] != dev.CdiDeviceIds[0] || len(e.agent.Partitioner().Instances()) != 1 {
		t.Errorf("second prepare %+v, instances %v", again, e.agent.Partitioner().Instances())
	}
	if msg := e.unprepare(c); msg != "" {
		t.Fatal(msg)
	}
	in, ok = e.instanceAt("2g.10gb", 0, 2)
	if !ok || in.State != partitioner.Idle {
		t.Fatalf("after unprepare: %v, want the instance idle", in)
	}
	if msg := e.unprepare(c); msg != "" {
		t.Errorf("second unprepare: %s", msg)
	}
	// An idle instance at the placement is reused, not remade.
	c2 := e.claim("b", "gpu0-2g-10gb-s2")
	if r := e.prepare(c2); r.Error != "" || r.Devices[0].CdiDeviceIds[0] != dev.CdiDeviceIds[0] {
		t.Errorf("reuse: %+v, want %s", r, dev.CdiDeviceIds[0])
	}
	// The idle-instance device leads its profile while it is idle.
	if msg := e.unprepare(c2); msg != "" {
		t.Fatal(msg)
	}
	waitFor(t, "the idle instance first", func() bool { return e.firstOf("2g.10gb") == "gpu0-2g-10gb-s2" })
}

func TestPrepareRefusesATakenPlacement(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.start()
	if r := e.prepare(e.claim("a", "gpu0-4g-20gb-s0")); r.Error != "" {
		t.Fatal(r.Error)
	}
	r := e.prepare(e.claim("b", "gpu0-2g-10gb-s2"))
	if !strings.Contains(r.Error, "stale") {
		t.Errorf("overlapping prepare: %q, want a refusal naming the stale slice", r.Error)
	}
	if r := e.prepare(e.claim("c", "gpu9-1g-5gb-s0")); !strings.Contains(r.Error, "no device") {
		t.Errorf("unknown device: %q", r.Error)
	}
}

func TestCrashBetweenPrepareAndUnprepareLosesNothing(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.start()
	c := e.claim("a", "gpu0-1g-5gb-s6")
	first := e.prepare(c)
	if first.Error != "" {
		t.Fatal(first.Error)
	}
	e.stop() // the agent ends without unpreparing; the instance stays
	e.start()
	in, ok := e.instanceAt("1g.5gb", 0, 6)
	if !ok || in.State != partitioner.InUse || !strings.HasPrefix(in.Owner, "dra:uid-a:") {
		t.Fatalf("after restart: %+v, want it in use by the claim", in)
	}
	again := e.prepare(c)
	if again.Error != "" || again.Devices[0].CdiDeviceIds[0] != first.Devices[0].CdiDeviceIds[0] {
		t.Errorf("prepare after restart %+v, want %v", again, first.Devices[0].CdiDeviceIds)
	}
	// The in-use instance is never destroyed: a 7g that needs its space
	// must wait.
	if _, _, err := e.agent.Partitioner().Allocate(context.Background(), "7g.40gb", "x"); err == nil {
		t.Error("a 7g.40gb was made over the claim's instance")
	}
	if msg := e.unprepare(c); msg != "" {
		t.Fatal(msg)
	}
	if in, _ := e.instanceAt("1g.5gb", 0, 6); in.State != partitioner.Idle {
		t.Errorf("after unprepare: %v", in)
	}
}
