//go:build e2e

package e2e

// Readmission against a real control plane: the real migpro-admission
// webhook, called by the real kube-apiserver, rewrites the replacement of a
// pod the Marker evicted through the Eviction API.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/readmit"
)

const (
	readmitNS   = "readmit-e2e"
	readmitNode = "readmit-node"
	res1g5      = "nvidia.com/mig-1g.5gb"
	res2g10     = "nvidia.com/mig-2g.10gb"
)

// TestReadmit runs the readmission without a kubelet: the test reports the
// pod Running and Ready, which the PDB needs (the Eviction API ignores PDBs
// for Pending pods).
func TestReadmit(t *testing.T) {
	cl := harness.StartCluster(t)
	ctx := context.Background()
	st := startReadmitStack(t, cl)
	createTrainer(t, cl, readmitNode, false)
	// The node object exists so that pod GC keeps its pods.
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: readmitNode}}, metav1.CreateOptions{})
		return err
	})
	old := st.firstPod(t, cl)
	old = reportRunning(t, cl.Client, old)

	marker := st.marker(t, readmitNode)
	mark := predictor.Mark{Reason: predictor.ReasonTimeToOOM, Forecast: 7 << 30, Profile: "2g.10gb", Fits: true,
		ContainerID: "c1", PodNamespace: old.Namespace, PodName: old.Name, PodUID: string(old.UID), ContainerName: "main",
		InstanceUUID: "MIG-e2e", InstanceProfile: "1g.5gb"}
	evictPastPDB(t, cl, marker, mark, old)
	st.checkReplacement(t, cl, old)

	// Marking again changes nothing.
	// Recommendations are keyed by the Deployment, not its ReplicaSet.
	cmName := readmit.StoreName("Deployment", "trainer")
	before, _ := cl.Client.CoreV1().ConfigMaps(readmitNS).Get(ctx, cmName, metav1.GetOptions{})
	if out, err := marker.Handle(ctx, mark); err != nil {
		t.Fatalf("second mark: %+v %v", out, err)
	}
	after, _ := cl.Client.CoreV1().ConfigMaps(readmitNS).Get(ctx, cmName, metav1.GetOptions{})
	if before.ResourceVersion != after.ResourceVersion {
		t.Errorf("second mark rewrote the recommendation")
	}

	// The recommendation goes with its controller.
	bg := metav1.DeletePropagationBackground
	if err := cl.Client.AppsV1().Deployments(readmitNS).Delete(ctx, "trainer", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the garbage collector to remove the recommendation with the Deployment", 60*time.Second, func() bool {
		_, err := cl.Client.CoreV1().ConfigMaps(readmitNS).Get(ctx, cmName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// createTrainer creates the trainer Deployment: one pod whose container
// main asks for nvidia.com/mig-1g.5gb: 1, bound to node when it is set.
func createTrainer(t *testing.T, cl *harness.Cluster, node string, hostNetwork bool) {
	t.Helper()
	ctx := context.Background()
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: readmitNS}}, metav1.CreateOptions{})
		return err
	})
	labels := map[string]string{"app": "trainer"}
	replicas, grace, no := int32(1), int64(1), false
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: readmitNS},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeName: node, HostNetwork: hostNetwork, TerminationGracePeriodSeconds: &grace, AutomountServiceAccountToken: &no,
				Containers: []corev1.Container{{Name: "main", Image: harness.BusyboxImageName, ImagePullPolicy: corev1.PullNever,
					Command:   []string{"sleep", "3600"},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{res1g5: resource.MustParse("1")}}}},
			}}},
	}
	mustCreate(t, func() error {
		_, err := cl.Client.AppsV1().Deployments(readmitNS).Create(ctx, d, metav1.CreateOptions{})
		return err
	})
}

// evictPastPDB runs the Marker on mark while a PDB allows no disruption: it
// must store the recommendation, annotate, report the refusal and keep
// retrying; once the PDB is deleted it must evict the pod.
func evictPastPDB(t *testing.T, cl *harness.Cluster, marker *readmit.Marker, mark predictor.Mark, old *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	minAvail := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: readmitNS},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvail, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "trainer"}}}}
	mustCreate(t, func() error {
		_, err := cl.Client.PolicyV1().PodDisruptionBudgets(readmitNS).Create(ctx, pdb, metav1.CreateOptions{})
		return err
	})
	eventually(t, "the PDB to count the pod healthy", 30*time.Second, func() bool {
		p, err := cl.Client.PolicyV1().PodDisruptionBudgets(readmitNS).Get(ctx, "trainer", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration >= p.Generation && p.Status.CurrentHealthy == 1 && p.Status.DisruptionsAllowed == 0
	})
	type result struct {
		out readmit.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() { o, err := marker.Handle(ctx, mark); done <- result{o, err} }()
	eventually(t, "the blocked eviction to be reported", 30*time.Second, func() bool {
		return podEvents(t, cl.Client, old.Name)[readmit.ReasonEvictionBlocked] != ""
	})
	select {
	case r := <-done:
		t.Fatalf("the Marker returned while the PDB forbids eviction: %+v %v", r.out, r.err)
	default:
	}
	evs := podEvents(t, cl.Client, old.Name)
	t.Logf("events while blocked: %v", evs)
	if m := evs[readmit.ReasonPredictedOOM]; !strings.Contains(m, res2g10) || !strings.Contains(m, "7.00 GiB") {
		t.Errorf("PredictedOOM event %q", m)
	}
	if m := evs[readmit.ReasonEvictionBlocked]; !strings.Contains(m, "disruption budget") {
		t.Errorf("blocked event %q does not name the budget", m)
	}
	cur, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil || cur.DeletionTimestamp != nil {
		t.Fatalf("the pod must still run while the PDB blocks: %v %v", err, cur.DeletionTimestamp)
	}
	var pred readmit.PredictedOOM
	if err := json.Unmarshal([]byte(cur.Annotations[readmit.AnnotationPredictedOOM]), &pred); err != nil ||
		pred.From != res1g5 || pred.To != res2g10 || pred.Container != "main" || pred.Node != old.Spec.NodeName {
		t.Errorf("annotation %q: %+v %v", cur.Annotations[readmit.AnnotationPredictedOOM], pred, err)
	}
	ctrl := metav1.GetControllerOf(cur)
	rec, err := readmit.Store{Client: cl.Client}.Get(ctx, readmitNS, readmit.Controller{APIVersion: ctrl.APIVersion, Kind: ctrl.Kind, Name: ctrl.Name, UID: ctrl.UID})
	if err != nil || rec == nil {
		t.Fatalf("recommendation for %s/%s: %+v %v", ctrl.Kind, ctrl.Name, rec, err)
	}
	if to, ok := rec.Target("main", res1g5); !ok || to != res2g10 {
		t.Fatalf("recommendation %+v", rec)
	}

	// The budget goes: the retry evicts.
	if err := cl.Client.PolicyV1().PodDisruptionBudgets(readmitNS).Delete(ctx, "trainer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the Marker did not evict within 60 s of the PDB's removal")
	}
	if r.err != nil || !r.out.Evicted || r.out.To != res2g10 {
		t.Fatalf("Marker: %+v %v", r.out, r.err)
	}
	if p, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, old.Name, metav1.GetOptions{}); err == nil && p.DeletionTimestamp == nil {
		t.Fatal("the pod is neither gone nor terminating after its eviction")
	}
}

// waitTrainerPod waits for a live pod of the trainer Deployment other than
// the one with uid not.
func waitTrainerPod(t *testing.T, cs kubernetes.Interface, not types.UID) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	eventually(t, "a trainer pod", 60*time.Second, func() bool {
		list, err := cs.CoreV1().Pods(readmitNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=trainer"})
		if err != nil {
			return false
		}
		for i := range list.Items {
			if p := &list.Items[i]; p.DeletionTimestamp == nil && p.UID != not {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

// reportRunning writes the status a kubelet would: Running and Ready.
func reportRunning(t *testing.T, cs kubernetes.Interface, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	// Controllers may write the pod meanwhile: on a conflict the status is
	// written again from the latest version.
	var out *corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cs.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Phase, cur.Status.StartTime = corev1.PodRunning, &now
		for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
			cur.Status.Conditions = append(cur.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
		out, err = cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("report pod running: %v", err)
	}
	return out
}

// podEvents maps reason → message of the events on a pod.
func podEvents(t *testing.T, cs kubernetes.Interface, pod string) map[string]string {
	t.Helper()
	list, err := cs.CoreV1().Events(readmitNS).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod).String()})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range list.Items {
		out[e.Reason] = e.Message
	}
	return out
}

// TestReadmitKubelet runs the readmission on a real node: a kubelet runs the
// pod on a 1g.5gb instance the agent made for it; after the eviction the
// replacement runs on a 2g.10gb instance the agent made for the replacement.
func TestReadmitKubelet(t *testing.T) {
	cl, k := startClusterNode(t)
	st := startReadmitStack(t, cl, "deploy/least-privilege/rbac-demand.yaml")
	// The agent reads ReplicaSets through the node view (the chart's RBAC
	// grants it none).
	a := startAgent(t, "a100-40gb", append([]string{"--plugin-dir", harness.DevicePluginDir, "--pod-resources", k.PodResourcesSocket(),
		"--kubeconfig", st.agentKC, "--node-name", k.NodeName}, agentViewFlags(t, cl, st.view, k.NodeName)...)...)

	createTrainer(t, cl, "", true)
	old := st.firstPod(t, cl)
	old = waitRunningOn(t, cl.Client, old.Name, k.NodeName)
	in := waitInstanceOf(t, a, old.Name, "1g.5gb")

	marker := st.marker(t, k.NodeName)
	mark := predictor.Mark{Reason: predictor.ReasonTimeToOOM, Forecast: 7 << 30, Profile: "2g.10gb", Fits: true,
		ContainerID: "c1", PodNamespace: old.Namespace, PodName: old.Name, PodUID: string(old.UID), ContainerName: "main",
		InstanceUUID: in.UUID, InstanceProfile: in.Profile}
	evictPastPDB(t, cl, marker, mark, old)
	repl := st.checkReplacement(t, cl, old)
	waitRunningOn(t, cl.Client, repl.Name, k.NodeName)
	moved := waitInstanceOf(t, a, repl.Name, "2g.10gb")
	t.Logf("readmitted: %s on %s %s → %s on %s %s", old.Name, in.Profile, in.UUID, repl.Name, moved.Profile, moved.UUID)
}

// waitRunningOn waits until the pod runs on node.
func waitRunningOn(t *testing.T, cs kubernetes.Interface, name, node string) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	eventually(t, name+" running on "+node, 120*time.Second, func() bool {
		var err error
		p, err = cs.CoreV1().Pods(readmitNS).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning
	})
	return p
}

// waitInstanceOf waits until the agent reports an instance of profile in
// use by the pod.
func waitInstanceOf(t *testing.T, a *agentProc, pod, profile string) client.StatusInstance {
	t.Helper()
	var found client.StatusInstance
	eventually(t, "the agent to report a "+profile+" in use by "+pod, 60*time.Second, func() bool {
		for _, in := range a.status(t).Instances {
			if in.Profile == profile && in.State == "in-use" && strings.Contains(in.Pod, pod) {
				found = in
				return true
			}
		}
		return false
	})
	return found
}
