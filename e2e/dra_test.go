//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/partitioner"
)

// draNode is a cluster node whose agent runs the DRA driver.
type draNode struct {
	cl *harness.Cluster
	k  *harness.Kubelet
	a  *agentProc
}

// startDRANode runs a cluster, one kubelet node and the agent with --dra on
// simulated GPUs, the device plugins on unless plugins is false, and the
// DeviceClasses the chart installs.
func startDRANode(t *testing.T, gpus string, plugins bool, extra ...string) *draNode {
	t.Helper()
	cl, k := startClusterNode(t)
	pluginDir := ""
	if plugins {
		pluginDir = harness.DevicePluginDir
	}
	args := append([]string{"--plugin-dir", pluginDir, "--pod-resources", k.PodResourcesSocket(),
		"--kubeconfig", cl.Kubeconfig, "--node-name", k.NodeName, "--assign-grace", "5s",
		"--dra", "--dra-kubelet-dir", k.RootDir}, extra...)
	a := startAgent(t, gpus, args...)
	createDeviceClasses(t, cl)
	n := &draNode{cl: cl, k: k, a: a}
	eventually(t, "the agent's ResourceSlices", 60*time.Second, func() bool { return len(n.devices(t)) > 0 })
	return n
}

// createDeviceClasses creates what the chart's dra.yaml installs for the
// A100-40GB profiles.
func createDeviceClasses(t *testing.T, cl *harness.Cluster) {
	t.Helper()
	classes := []resourceapi.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: "mig.migpro.dev"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "migpro.dev"`}}}}}}
	for _, p := range []string{"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"} {
		ext := "nvidia.com/mig-" + p
		classes = append(classes, resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: p + ".mig.migpro.dev"},
			Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: &ext, Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.driver == "migpro.dev" && device.attributes["migpro.dev"].profile == %q`, p)}}}}})
	}
	for i := range classes {
		if _, err := cl.Client.ResourceV1().DeviceClasses().Create(context.Background(), &classes[i], metav1.CreateOptions{}); err != nil {
			t.Fatalf("create DeviceClass %s: %v", classes[i].Name, err)
		}
	}
}

// devices is the node's published devices in the scheduler's order.
func (n *draNode) devices(t *testing.T) []resourceapi.Device {
	l, err := n.cl.Client.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list ResourceSlices: %v", err)
	}
	items := l.Items
	for i := range items {
		for j := i + 1; j < len(items); j++ {
			if items[j].Name < items[i].Name {
				items[i], items[j] = items[j], items[i]
			}
		}
	}
	var out []resourceapi.Device
	for _, s := range items {
		out = append(out, s.Spec.Devices...)
	}
	return out
}

// claimTemplate stores a ResourceClaimTemplate with one request.
func (n *draNode) claimTemplate(t *testing.T, name string, req resourceapi.DeviceRequest) {
	t.Helper()
	req.Name = "mig"
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}}}}
	if _, err := n.cl.Client.ResourceV1().ResourceClaimTemplates("default").Create(context.Background(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaimTemplate %s: %v", name, err)
	}
}

func profileRequest(profile string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: profile + ".mig.migpro.dev"}}
}

// claimPod is a pod whose container uses a claim made from a template.
func claimPod(name, template string) *corev1.Pod {
	p := demandPod(name, 1)
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}
	return p
}

// extendedPod asks for an extended resource by name, as pod specs do today.
func extendedPod(name, profile string) *corev1.Pod {
	p := demandPod(name, 1)
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceName("nvidia.com/mig-" + profile): *resource.NewQuantity(1, resource.DecimalSI)}
	return p
}

// runPods creates the pods together and returns how long the last took from
// creation to Running.
func (n *draNode) runPods(t *testing.T, pods ...*corev1.Pod) time.Duration {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	for _, p := range pods {
		if _, err := n.cl.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.Name, err)
		}
	}
	pending := map[string]bool{}
	for _, p := range pods {
		pending[p.Name] = true
	}
	var took time.Duration
	deadline := time.Now().Add(120 * time.Second)
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("pods %v not Running after 120s\n%s", pending, n.a.logTail())
		}
		for name := range pending {
			p, err := n.cl.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodRunning {
				delete(pending, name)
				took = time.Since(start)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return took
}

func (n *draNode) deletePods(t *testing.T, names ...string) {
	t.Helper()
	zero := int64(0)
	for _, name := range names {
		if err := n.cl.Client.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatalf("delete pod %s: %v", name, err)
		}
	}
	eventually(t, "the pods gone", 60*time.Second, func() bool {
		for _, name := range names {
			if _, err := n.cl.Client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
}

// instanceOf is the agent's instance with the UUID.
func instanceOf(t *testing.T, a *agentProc, uuid string) client.StatusInstance {
	t.Helper()
	in, ok := instanceByUUID(a.status(t), uuid)
	if !ok {
		t.Fatalf("the agent has no instance %s: %+v", uuid, a.status(t).Instances)
	}
	return in
}

// TestDRAClaims: through the real scheduler and kubelet, a claim for a
// profile with no instance reaches Running and its container sees the
// instance; two claims on one GPU land where migpro itself would put them;
// a claim by memory gets the smallest profile that holds it; a
// firstAvailable list takes its first choice; an agent kill -9 after Prepare
// loses nothing.
func TestDRAClaims(t *testing.T) {
	n := startDRANode(t, "a100-40gb", true)
	// migpro's own choices for two 1g.5gb in a row, from the partitioner on
	// an identical simulated GPU.
	sim, err := simgpu.NewNode("a100-40gb", simgpu.WithRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	ref, err := partitioner.New(sim, partitioner.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for i := 0; i < 2; i++ {
		in, _, err := ref.Allocate(context.Background(), "1g.5gb", "x")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, in.Placement.Start)
	}

	n.claimTemplate(t, "mig-1g-5gb", profileRequest("1g.5gb"))
	took := n.runPods(t, claimPod("c1", "mig-1g-5gb"))
	t.Logf("DRA: a claim for a profile with no instance ran in %v", took.Round(time.Millisecond))
	uuid := podMIGs(t, n.cl, "c1")[0]
	checkDeviceView(t, podLog(t, n.cl, "c1"), uuid)
	first := instanceOf(t, n.a, uuid)
	if first.State != "in-use" || !strings.HasPrefix(first.Owner, "dra:") || first.Placement.Start != want[0] {
		t.Errorf("first claim's instance %+v, want in use by the claim at slot %d (migpro's choice)", first, want[0])
	}
	n.runPods(t, claimPod("c2", "mig-1g-5gb"))
	second := instanceOf(t, n.a, podMIGs(t, n.cl, "c2")[0])
	if second.Placement.Start != want[1] || second.GPU != 0 {
		t.Errorf("second claim's instance at slot %d, migpro would put it at %d", second.Placement.Start, want[1])
	}

	// By memory: at least 9 GiB is a 1g.10gb, the smallest that holds it
	// (NVML reports under 10 GiB for a "10gb" profile).
	n.claimTemplate(t, "mig-9gi", resourceapi.DeviceRequest{Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "mig.migpro.dev",
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.capacity["migpro.dev"].memory.compareTo(quantity("9Gi")) >= 0`}}}}})
	n.runPods(t, claimPod("mem", "mig-9gi"))
	if in := instanceOf(t, n.a, podMIGs(t, n.cl, "mem")[0]); in.Profile != "1g.10gb" {
		t.Errorf("a claim for >= 9Gi got %s, want 1g.10gb", in.Profile)
	}

	// firstAvailable: a 2g.10gb, else a 3g.20gb.
	n.claimTemplate(t, "mig-2g-else-3g", resourceapi.DeviceRequest{FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "small", DeviceClassName: "2g.10gb.mig.migpro.dev"}, {Name: "large", DeviceClassName: "3g.20gb.mig.migpro.dev"}}})
	n.runPods(t, claimPod("alt", "mig-2g-else-3g"))
	if in := instanceOf(t, n.a, podMIGs(t, n.cl, "alt")[0]); in.Profile != "2g.10gb" {
		t.Errorf("firstAvailable got %s, want 2g.10gb", in.Profile)
	}

	// Releasing: a deleted pod's claim is unprepared and its instance goes
	// back to idle.
	n.deletePods(t, "c1")
	eventually(t, "the first claim's instance idle", 60*time.Second, func() bool { return instanceOf(t, n.a, uuid).State == "idle" })
}

// TestDRAAgentKilledAfterPrepare: the agent is killed with SIGKILL right
// after the kubelet's Prepare made the instance; after its restart the pod
// runs on that same instance, still held by the claim, and nothing else was
// made.
func TestDRAAgentKilledAfterPrepare(t *testing.T) {
	n := startDRANode(t, "a100-40gb", true)
	n.claimTemplate(t, "mig-3g", profileRequest("3g.20gb"))
	p := claimPod("k", "mig-3g")
	if _, err := n.cl.Client.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var made client.StatusInstance
	eventually(t, "Prepare to make the instance", 60*time.Second, func() bool {
		for _, in := range n.a.status(t).Instances {
			if in.Profile == "3g.20gb" && strings.HasPrefix(in.Owner, "dra:") {
				made = in
				return true
			}
		}
		return false
	})
	n.a.crashAndRestart(t)
	waitScheduledRunning(t, n.cl, "k", n.k.NodeName)
	if got := podMIGs(t, n.cl, "k")[0]; got != made.UUID {
		t.Errorf("the pod runs on %s, Prepare made %s", got, made.UUID)
	}
	st := n.a.status(t)
	if len(st.Instances) != 1 || st.Instances[0].State != "in-use" || st.Instances[0].Owner != made.Owner {
		t.Errorf("after the crash: %+v, want only %s held by %s", st.Instances, made.UUID, made.Owner)
	}
}

// TestDRAExtendedResource: with the device plugins off, a pod that asks
// for nvidia.com/mig-1g.5gb: 1, unchanged, is served through DRA (the
// DeviceClass's extendedResourceName) and runs on a new instance.
func TestDRAExtendedResource(t *testing.T) {
	n := startDRANode(t, "a100-40gb", false)
	took := n.runPods(t, extendedPod("ext", "1g.5gb"))
	t.Logf("DRA: an unchanged pod for nvidia.com/mig-1g.5gb ran in %v", took.Round(time.Millisecond))
	uuid := podMIGs(t, n.cl, "ext")[0]
	checkDeviceView(t, podLog(t, n.cl, "ext"), uuid)
	if in := instanceOf(t, n.a, uuid); !strings.HasPrefix(in.Owner, "dra:") || in.Profile != "1g.5gb" {
		t.Errorf("instance %+v, want a 1g.5gb held through DRA", in)
	}
}

// TestDRAPendingToRunning measures, on one cluster in one run, Pending to
// Running for profiles with no instance yet: DRA against the device-plugin
// path, one pod and ten pods that arrive together. The figures are in the
// log (grep PENDING-TO-RUNNING).
func TestDRAPendingToRunning(t *testing.T) {
	n := startDRANode(t, "a100-40gb:8", true)
	n.claimTemplate(t, "m2g", profileRequest("2g.10gb"))
	n.claimTemplate(t, "m1g", profileRequest("1g.5gb"))

	dp1 := n.runPods(t, extendedPod("dp-one", "3g.20gb"))
	var ten []*corev1.Pod
	for i := 0; i < 10; i++ {
		ten = append(ten, extendedPod(fmt.Sprintf("dp-%d", i), "1g.10gb"))
	}
	dp10 := n.runPods(t, ten...)
	dra1 := n.runPods(t, claimPod("dra-one", "m2g"))
	ten = ten[:0]
	for i := 0; i < 10; i++ {
		ten = append(ten, claimPod(fmt.Sprintf("dra-%d", i), "m1g"))
	}
	dra10 := n.runPods(t, ten...)
	t.Logf("PENDING-TO-RUNNING one pod: DRA %v, device plugin %v; ten pods together: DRA %v, device plugin %v",
		dra1.Round(time.Millisecond), dp1.Round(time.Millisecond), dra10.Round(time.Millisecond), dp10.Round(time.Millisecond))
	if dra1 > 5*time.Second {
		t.Errorf("DRA took %v for one pod", dra1)
	}
	// Every pod holds its own instance of the profile it asked for (the
	// device-plugin path may leave an extra idle one from the burst).
	inUse := map[string]int{}
	for _, in := range n.a.status(t).Instances {
		if in.State == "in-use" {
			inUse[in.Profile]++
		}
	}
	if want := map[string]int{"3g.20gb": 1, "1g.10gb": 10, "2g.10gb": 1, "1g.5gb": 10}; fmt.Sprint(inUse) != fmt.Sprint(want) {
		t.Errorf("instances in use %v, want %v", inUse, want)
	}
}
