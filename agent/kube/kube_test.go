package kube_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/agent/kube"
	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/plugin/podresources/podresourcestest"
	"github.com/migpro/migpro/readmit"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

type env struct {
	cfg  agent.Config
	node *simgpu.Node
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	node, err := simgpu.NewNode("a100-40gb", simgpu.WithRoot(filepath.Join(dir, "sim")), simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	return &env{node: node, cfg: agent.Config{StateDir: filepath.Join(dir, "state"), CDISpecDir: filepath.Join(dir, "cdi"),
		Socket: filepath.Join(dir, "a.sock"), AssignGrace: time.Nanosecond, TelemetryDir: filepath.Join(dir, "run"),
		PluginDir: t.TempDir(), NodeName: "node-1", PollEvery: 5 * time.Millisecond}}
}

func (e *env) open(t *testing.T, opts ...agent.Option) *agent.Agent {
	t.Helper()
	quiet := quietlog.New()
	opts = append([]agent.Option{agent.WithAssignments(podresourcestest.NewFake()), agent.WithLogger(quiet)}, opts...)
	a, err := agent.New(e.cfg, agent.GPU{Node: e.node}, opts...)
	if err == nil {
		err = a.Open(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// runLinked opens an agent linked to the fake API server cs, runs it until
// the test ends, and returns it with a client of its local API once that
// answers.
func (e *env) runLinked(t *testing.T, cs *fake.Clientset) (*agent.Agent, *client.Client) {
	t.Helper()
	a := e.open(t, agent.WithCluster(kube.New(kube.WithClientset(cs))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	c := client.New(e.cfg.Socket)
	waitFor(t, "the local API", func() bool { _, err := c.Status(ctx); return err == nil })
	return a, c
}

func TestLinkIsOnOnlyWithAnAPIServerANodeAndPlugins(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		adjust  func(*agent.Config)
		wantOn  bool
		wantErr bool
		dra     bool // the agent also runs its DRA driver
	}{
		{"no kubeconfig and not in a pod", func(*agent.Config) {}, false, false, false},
		{"a missing kubeconfig", func(c *agent.Config) { c.Kubeconfig = filepath.Join(t.TempDir(), "missing") }, false, true, false},
		{"a kubeconfig and a node name", func(c *agent.Config) { c.Kubeconfig = kc }, true, false, false},
		{"no node name", func(c *agent.Config) { c.Kubeconfig, c.NodeName = kc, "" }, false, false, false},
		{"no device plugins", func(c *agent.Config) { c.Kubeconfig, c.PluginDir = kc, "" }, false, false, false},
		// Readmission stays on for pods served through DRA alone.
		{"no device plugins, DRA", func(c *agent.Config) { c.Kubeconfig, c.PluginDir = kc, "" }, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tc.adjust(&e.cfg)
			var opts []kube.Option
			if tc.dra {
				opts = append(opts, kube.WithDRA())
			}
			l, err := kube.New(opts...)(t.Context(), e.open(t))
			if (err != nil) != tc.wantErr || (l != nil) != tc.wantOn {
				t.Fatalf("link %v, err %v; want on=%v err=%v", l, err, tc.wantOn, tc.wantErr)
			}
		})
	}
}

// A pod's container marked by the agent's own predictor is handed to
// readmission: its recommendation is stored and the pod is evicted. When
// the agent stops, the link stops with it.
func TestMarkedPodIsEvictedForReadmission(t *testing.T) { testMarkedPod(t, "evict") }

// In advise mode, the default, the same mark annotates the pod, stores the
// advised recommendation and counts it, and the pod keeps running.
func TestMarkedPodIsAdvisedByDefault(t *testing.T) { testMarkedPod(t, "") }

func testMarkedPod(t *testing.T, mode string) {
	const ns = "default"
	isController := true
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8b6c4", Namespace: ns, UID: types.UID("rs-uid")}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8b6c4-x2x1z", Namespace: ns, UID: types.UID("pod-uid"),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &isController}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	cs := fake.NewClientset(rs, pod)
	e := newEnv(t)
	e.cfg.ReadmitMode = mode
	a := e.open(t, agent.WithCluster(kube.New(kube.WithClientset(cs))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	c := client.New(e.cfg.Socket)
	waitFor(t, "the local API", func() bool { _, err := c.Status(ctx); return err == nil })

	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, telemetryapi.Registration{ID: "ctr", PID: 1, MIGUUIDs: []string{r.UUID},
		PodNamespace: ns, PodName: pod.Name, PodUID: string(pod.UID), ContainerName: "main"}); err != nil {
		t.Fatal(err)
	}
	in, err := a.Partitioner().Find(r.UUID)
	if err != nil {
		t.Fatal(err)
	}
	_, capacity, err := a.InstanceMemory(r.UUID)
	if err != nil {
		t.Fatal(err)
	}
	evictions := func() int {
		n := 0
		for _, act := range cs.Actions() {
			if act.GetVerb() == "create" && act.GetSubresource() == "eviction" {
				n++
			}
		}
		return n
	}
	// Memory ramps to the instance's capacity over three seconds: the
	// predictor marks it, and the link evicts the pod.
	annotated := func() bool {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && p.Annotations[readmit.AnnotationPredictedOOM] != ""
	}
	acted := func() bool { return evictions() > 0 || (mode != "evict" && annotated()) }
	start := time.Now()
	for !acted() && time.Since(start) < 5*time.Second {
		frac := min(1, 0.1+0.9*float64(time.Since(start))/float64(3*time.Second))
		e.node.SetInstanceMemoryUsed(in.GPU, in.GIID, uint64(frac*float64(capacity)))
		time.Sleep(20 * time.Millisecond)
	}
	want := 1
	if mode != "evict" {
		want = 0
		if !annotated() {
			t.Fatal("advise mode: the pod was not annotated")
		}
		waitFor(t, "the advised counter", func() bool {
			return gathered(t, a, "migpro_readmit_advised_total") == 1 && gathered(t, a, "migpro_readmissions_total") == 1
		})
	}
	if n := evictions(); n != want {
		t.Fatalf("%d evictions through the Eviction API, want %d", n, want)
	}
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("recommendation store: %v %v, want one ConfigMap", cms, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("agent run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop with its context")
	}
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

// gathered is the sum of a metric family's samples in the agent's registry.
func gathered(t *testing.T, a *agent.Agent, name string) float64 {
	t.Helper()
	mfs, err := a.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
