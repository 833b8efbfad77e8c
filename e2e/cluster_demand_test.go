//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/migpro/migpro/demand"
	"github.com/migpro/migpro/e2e/harness"
)

// watchPod records every version of a pod the API server reports.
type podWatch struct {
	mu   sync.Mutex
	seen []corev1.Pod
}

func watchPod(t *testing.T, cs kubernetes.Interface, ns, name string) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatalf("watch pod %s: %v", name, err)
	}
	pw := &podWatch{}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				pw.mu.Lock()
				pw.seen = append(pw.seen, *p)
				pw.mu.Unlock()
			}
		}
	}()
	return pw
}

// wasUnschedulable reports whether the scheduler had marked the pod
// Unschedulable before any migpro claim was on it.
func (pw *podWatch) wasUnschedulable() bool {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	for _, p := range pw.seen {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable && p.Annotations[demand.AnnotationClaimedBy] == "" {
				return true
			}
		}
	}
	return false
}

// startClusterNode runs a cluster and one kubelet node on containerd, with
// busybox imported, and waits for the node to be Ready.
func startClusterNode(t *testing.T) (*harness.Cluster, *harness.Kubelet) {
	t.Helper()
	cl := harness.StartCluster(t)
	c := harness.StartContainerd(t)
	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c, Cluster: cl})
	c.ImportArchive(t, "k8s.io", harness.BusyboxImage(t))
	cl.WaitNodeReady(t, k.NodeName, 60*time.Second)
	return cl, k
}

// startNodeAgent runs the agent on a simulated A100 as node k's device
// plugin, with the identity in kubeconfig. It keeps the default
// --assign-grace (30 s), as a user's agent does: none of its tests waits for
// an instance to go back to idle, and a shorter grace lets a loaded machine's
// slow PodResources listing release an instance a pod was just given.
func startNodeAgent(t *testing.T, k *harness.Kubelet, kubeconfig string) *agentProc {
	t.Helper()
	return startAgent(t, "a100-40gb", "--plugin-dir", harness.DevicePluginDir, "--pod-resources", k.PodResourcesSocket(),
		"--kubeconfig", kubeconfig, "--node-name", k.NodeName)
}

// Issue 3, the cluster source: a pod asks for a MIG profile that no node
// has; the scheduler finds it unschedulable, the agent claims it, makes the
// instance, the scheduler places the pod and its container sees the instance.
func TestClusterDemand(t *testing.T) {
	cl, k := startClusterNode(t)
	// The agent runs with exactly the RBAC the docs give it.
	kubeconfig := serviceAccountKubeconfig(t, cl, "migpro-agent", manifestDocs(t, filepath.Join(repoRoot(), "deploy/least-privilege/rbac-demand.yaml"), nil))

	// No warm pool: the GPU starts empty.
	a := startNodeAgent(t, k, kubeconfig)
	if st := a.status(t); len(st.Instances) != 0 {
		t.Fatalf("agent starts with instances %+v, want none", st.Instances)
	}

	ctx := context.Background()
	pw := watchPod(t, cl.Client, "default", "demand")
	created := time.Now()
	if _, err := cl.Client.CoreV1().Pods("default").Create(ctx, demandPod("demand", 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	get := func(name string) *corev1.Pod {
		p, err := cl.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get pod: %v", err)
		}
		return p
	}

	var claimed *corev1.Pod
	eventually(t, "the agent's claim on the pod", 60*time.Second, func() bool {
		claimed = get("demand")
		return claimed.Annotations[demand.AnnotationClaimedBy] == k.NodeName && claimed.Annotations[demand.AnnotationProvisionedAt] != ""
	})
	t.Logf("claimed and provisioned %v after creation: %v", time.Since(created).Round(time.Millisecond), claimed.Annotations)
	if _, err := time.Parse(time.RFC3339, claimed.Annotations[demand.AnnotationClaimedAt]); err != nil {
		t.Errorf("claimed-at: %v", err)
	}
	waitScheduledRunning(t, cl, "demand", k.NodeName)
	t.Logf("running %v after creation", time.Since(created).Round(time.Millisecond))
	if !pw.wasUnschedulable() {
		t.Errorf("never saw the pod Unschedulable before the claim: the agent should act only on such pods")
	}

	// What the container saw, read through the API server.
	uuids := podMIGs(t, cl, "demand")
	if len(uuids) != 1 {
		t.Fatalf("container sees %v, want one MIG instance", uuids)
	}
	uuid := uuids[0]
	checkDeviceView(t, podLog(t, cl, "demand"), uuid)

	// Exactly one instance was made, and it is the pod's.
	var last any
	if !within(30*time.Second, func() bool {
		in, ok := instanceByUUID(a.status(t), uuid)
		last = in
		return ok && in.State == "in-use" && strings.Contains(in.Pod, "demand")
	}) {
		t.Fatalf("the agent never saw %s in use by the pod; last %+v", uuid, last)
	}
	if st := a.status(t); len(st.Instances) != 1 || st.Instances[0].Profile != "1g.5gb" {
		t.Fatalf("instances %+v, want exactly the pod's 1g.5gb", st.Instances)
	}

	// The claim was recorded as an Event on the pod (the agent's RBAC
	// allows events). Events are posted in the background, so wait for them.
	reasons := map[string]bool{}
	if !within(30*time.Second, func() bool {
		evs, err := cl.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "demand").String()})
		if err != nil {
			t.Logf("list events: %v", err)
			return false
		}
		for _, e := range evs.Items {
			reasons[e.Reason] = true
		}
		return reasons[demand.ReasonClaimed] && reasons[demand.ReasonProvisioned]
	}) {
		t.Errorf("pod events %v lack %s and %s", reasons, demand.ReasonClaimed, demand.ReasonProvisioned)
	}

	// Two pods at once, one asking for two instances and one for one: the
	// agent claims both without waiting for either to be scheduled (the
	// instances it reserves for one do not hide the room left for the other)
	// and makes three more.
	// The two-instance pod's container gets the device nodes of both (a GI
	// and a CI capability each). NVIDIA_VISIBLE_DEVICES is not checked for
	// it: each instance's CDI spec sets it to its own UUID, so the container
	// sees only one of them.
	batch := time.Now()
	for _, p := range []*corev1.Pod{demandPod("demand2", 2), demandPod("demand3", 1)} {
		if _, err := cl.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod: %v", err)
		}
	}
	waitScheduledRunning(t, cl, "demand2", k.NodeName)
	waitScheduledRunning(t, cl, "demand3", k.NodeName)
	t.Logf("both running %v after creation", time.Since(batch).Round(time.Millisecond))
	podMIGs(t, cl, "demand2")
	out2 := podLog(t, cl, "demand2")
	if n := len(regexp.MustCompile(`CAP=nvidia-cap\d+`).FindAllString(out2, -1)); n != 4 {
		t.Errorf("the two-instance pod sees %d nvidia-caps nodes, want 4 (GI and CI of each):\n%s", n, out2)
	}
	three := podMIGs(t, cl, "demand3")
	checkDeviceView(t, podLog(t, cl, "demand3"), three[0])
	if !within(30*time.Second, func() bool {
		st := a.status(t)
		last = st.Instances
		by := map[string]int{}
		for _, in := range st.Instances {
			if in.Profile == "1g.5gb" && in.State == "in-use" {
				if parts := strings.Split(in.Pod, "/"); len(parts) == 3 { // namespace/pod/container
					by[parts[1]]++
				}
			}
		}
		return len(st.Instances) == 4 && by["demand"] == 1 && by["demand2"] == 2 && by["demand3"] == 1
	}) {
		t.Fatalf("want four instances, in use by demand (1), demand2 (2) and demand3 (1); last %+v", last)
	}
	// Each was claimed before the other was scheduled: neither waited.
	claimedAt, scheduledAt := map[string]time.Time{}, map[string]time.Time{}
	for _, name := range []string{"demand2", "demand3"} {
		p := get(name)
		if by := p.Annotations[demand.AnnotationClaimedBy]; by != k.NodeName {
			t.Errorf("%s claimed-by %q", name, by)
		}
		claimedAt[name], _ = time.Parse(time.RFC3339, p.Annotations[demand.AnnotationClaimedAt])
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				scheduledAt[name] = c.LastTransitionTime.Time
			}
		}
	}
	if claimedAt["demand3"].After(scheduledAt["demand2"]) || claimedAt["demand2"].After(scheduledAt["demand3"]) {
		t.Errorf("one pod waited for the other: claimed %v, scheduled %v", claimedAt, scheduledAt)
	}
	for _, name := range []string{"demand", "demand2", "demand3"} {
		if err := cl.Client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete pod %s: %v", name, err)
		}
	}
}

// demandPod asks for n 1g.5gb and prints what it sees of them.
func demandPod(name string, n int64) *corev1.Pod {
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{
				Name: "main", Image: harness.BusyboxImageName, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", devScript + "; sleep 600"},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceName(migResource): *resource.NewQuantity(n, resource.DecimalSI)}},
			}},
		},
	}
}

func waitScheduledRunning(t *testing.T, cl *harness.Cluster, name, node string) {
	t.Helper()
	eventually(t, "the scheduler to place "+name+" and the kubelet to run it", 120*time.Second, func() bool {
		p, err := cl.Client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning
	})
}

func podLog(t *testing.T, cl *harness.Cluster, name string) string {
	t.Helper()
	b, _ := cl.Client.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{Container: "main"}).DoRaw(context.Background())
	return string(b)
}

// podMIGs waits for the container's report and returns the MIG UUIDs in its
// NVIDIA_VISIBLE_DEVICES.
func podMIGs(t *testing.T, cl *harness.Cluster, name string) []string {
	t.Helper()
	re := regexp.MustCompile(`NVD=(MIG-[0-9a-f,MIG-]+)`)
	var out string
	eventually(t, name+"'s output", 60*time.Second, func() bool {
		out = podLog(t, cl, name)
		return re.MatchString(out) && strings.Contains(out, "READ=")
	})
	return strings.Split(re.FindStringSubmatch(out)[1], ",")
}

// countingProv provisions without limit and counts.
type countingProv struct {
	mu   sync.Mutex
	idle map[string]int
	made int
}

func (p *countingProv) CanFit(string, int, demand.Reserved) bool { return true }
func (p *countingProv) IdleCount(prof string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle[prof]
}
func (p *countingProv) Provision(_ context.Context, prof string, _ demand.Reserved) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle[prof]++
	p.made++
	return nil
}
func (p *countingProv) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.made
}

// Two agents' demand sources watch the same real API server and race for
// the same pods: every pod ends with exactly one claim, and only the
// claimer provisions for it.
func TestClusterDemandClaimRace(t *testing.T) {
	cl := harness.StartCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := []string{"race-a", "race-b"}
	for _, n := range nodes {
		if _, err := cl.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", n, err)
		}
		// Ready, or each source would take the other's claims as stale
		// (the test ends long before the node controller's grace period).
		// The node controller writes the new node too (its taints), so the
		// update is retried on a conflict from the latest version.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := cl.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			now := metav1.Now()
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
			_, err = cl.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("node %s Ready: %v", n, err)
		}
	}
	provs := map[string]*countingProv{}
	lost := &lostClaims{}
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	log.SetOutput(io.Discard)
	log.AddHook(lost)
	var wg sync.WaitGroup
	for _, n := range nodes {
		provs[n] = &countingProv{idle: map[string]int{}}
		src, err := demand.New(cl.Client, n, provs[n], demand.WithDomain("nvidia.com"),
			demand.WithResources(map[corev1.ResourceName]string{migResource: "1g.5gb"}), demand.WithResync(200*time.Millisecond), demand.WithLogger(log))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); src.Run(ctx) }()
	}
	defer wg.Wait()
	defer cancel()

	const pods = 20
	no := false
	for i := range pods {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("race-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{AutomountServiceAccountToken: &no,
				// The nodes have no kubelet: tolerate their not-ready taints.
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{Name: "main", Image: "none",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
						corev1.ResourceName(migResource): resource.MustParse("1")}}}}},
		}
		if _, err := cl.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod: %v", err)
		}
	}
	claims := map[string]int{}
	eventually(t, "every pod claimed", 90*time.Second, func() bool {
		list, err := cl.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		claims = map[string]int{}
		for _, p := range list.Items {
			if by := p.Annotations[demand.AnnotationClaimedBy]; by != "" && p.Annotations[demand.AnnotationProvisionedAt] != "" {
				claims[by]++
			}
		}
		return claims[nodes[0]]+claims[nodes[1]] == pods
	})
	time.Sleep(time.Second) // let any second claimer act, if one wrongly would
	for _, n := range nodes {
		if got := provs[n].count(); got != claims[n] {
			t.Errorf("%s provisioned %d instances for the %d pods it claimed", n, got, claims[n])
		}
	}
	t.Logf("claims %v; %d claims lost to a Conflict", claims, lost.count())
	if lost.count() == 0 {
		t.Error("no claim was ever lost to a Conflict: the two sources never raced, so this proved nothing")
	}
}

// lostClaims counts the claims a source lost to the other's concurrent
// patch (its debug message), to show that the two really raced.
type lostClaims struct {
	mu sync.Mutex
	n  int
}

func (l *lostClaims) Levels() []logrus.Level { return logrus.AllLevels }
func (l *lostClaims) Fire(e *logrus.Entry) error {
	if strings.Contains(e.Message, "claimed the pod first") {
		l.mu.Lock()
		l.n++
		l.mu.Unlock()
	}
	return nil
}
func (l *lostClaims) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}
