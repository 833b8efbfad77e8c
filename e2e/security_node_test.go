//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/readmit"
)

// One node's identity stays on its node, on the real v1.32 API server with
// the chart's RBAC, agent policies and admission guards, acting as the agent
// of gpu-a against another namespace's workload running on gpu-b (issue 33
// mediums 5 and 6):
//   - it reads no ConfigMap outside migpro's recommendations (a kube-system
//     one was readable);
//   - it annotates only pods of its own node, and a pending pod only with its
//     own claim;
//   - it records a recommendation only for a pod that runs on its node, of
//     the recommendation's controller (it steered another namespace's new
//     pods from 3g.20gb to 1g.5gb).
func TestSecurityNodeIdentityStaysOnItsNode(t *testing.T) {
	cl := harness.StartCluster(t)
	ctx := context.Background()
	root := repoRoot()
	admin := cl.Client
	for _, n := range []string{"gpu-a", "gpu-b"} {
		mustCreate(t, func() error {
			_, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
			return err
		})
	}
	agent := chartAgentOnNode(t, cl, "gpu-a")
	refused := func(what string, err error, want string) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: allowed, want refused", what)
		case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
			t.Errorf("%s: %v, want forbidden or invalid", what, err)
		case want != "" && !strings.Contains(err.Error(), want):
			t.Errorf("%s: %v, want it to say %q", what, err, want)
		default:
			t.Logf("%s: refused: %v", what, err)
		}
	}
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v, want allowed", what, err)
		}
	}

	// Medium 6: no ConfigMap outside migpro's own, by get or otherwise.
	mustCreate(t, func() error {
		_, err := admin.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-settings"},
			Data: map[string]string{"token": "s3cret"}}, metav1.CreateOptions{})
		return err
	})
	_, err := agent.CoreV1().ConfigMaps("kube-system").Get(ctx, "cluster-settings", metav1.GetOptions{})
	refused("get a kube-system ConfigMap", err, "")
	applyAgentPolicies(t, cl)
	i := 0
	eventually(t, "the agent policies in force", 30*time.Second, func() bool {
		i++
		_, err := agent.CoreV1().ConfigMaps("kube-system").Patch(ctx, "cluster-settings", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"probe":"`+strconv.Itoa(i)+`"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
	})
	cm, err := agent.CoreV1().ConfigMaps("kube-system").Patch(ctx, "cluster-settings", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	refused("read a kube-system ConfigMap with an empty patch", err, "migpro-agent-configmaps")
	if cm != nil && cm.Data["token"] != "" {
		t.Errorf("the agent read kube-system/cluster-settings: %v", cm.Data)
	}

	// Medium 5: a workload of another namespace, one pod on each node and
	// one pending.
	mustCreate(t, func() error {
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}, metav1.CreateOptions{})
		return err
	})
	zero := int32(0)
	rs, err := admin.AppsV1().ReplicaSets("tenant").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "tenant"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "trainer"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	pods := map[string]*corev1.Pod{}
	// The ReplicaSet (0 replicas) deletes its bound pods gracefully, and
	// with no kubelet they stay, terminating; the pending pod is its own
	// (an unbound pod would be gone at once), and stays pending: no node
	// offers what it asks for.
	for name, node := range map[string]string{"train-a": "gpu-a", "train-b": "gpu-b", "train-pending": ""} {
		mig := corev1.ResourceList{"nvidia.com/mig-3g.20gb": resource.MustParse("1")}
		var owners []metav1.OwnerReference
		labels := map[string]string{"job": "train"}
		if node != "" {
			owners = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}
			labels = map[string]string{"app": "train"}
		}
		p, err := admin.CoreV1().Pods("tenant").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", Labels: labels,
				OwnerReferences: owners},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "trainer",
				Resources: corev1.ResourceRequirements{Limits: mig, Requests: mig}}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods[name] = p
	}
	annotate := func(pod, body string) error {
		_, err := agent.CoreV1().Pods("tenant").Patch(ctx, pod, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	refused("annotate a pod on another node", annotate("train-b", `{"metadata":{"annotations":{"migpro.dev/predicted-oom":"x"}}}`),
		"may annotate only pods on its own node")
	allowed("annotate a pod on its own node", annotate("train-a", `{"metadata":{"annotations":{"migpro.dev/predicted-oom":"x"}}}`))
	refused("claim a pending pod in another node's name", annotate("train-pending",
		`{"metadata":{"annotations":{"migpro.dev/claimed-by":"gpu-b","migpro.dev/claimed-at":"`+now+`"}}}`), "may write only its own claim")
	refused("put another migpro.dev/ annotation on a pending pod", annotate("train-pending",
		`{"metadata":{"annotations":{"migpro.dev/predicted-oom":"x"}}}`), "only with its claim")
	allowed("claim a pending pod in its own name", annotate("train-pending",
		`{"metadata":{"annotations":{"migpro.dev/claimed-by":"gpu-a","migpro.dev/claimed-at":"`+now+`"}}}`))
	refused("claim a scheduled pod of another node", annotate("train-b",
		`{"metadata":{"annotations":{"migpro.dev/claimed-by":"gpu-a","migpro.dev/claimed-at":"`+now+`"}}}`), "")

	// Recommendations, with migpro-admission's guards registered.
	admission := filepath.Join(root, "deploy/kubernetes/admission.yaml")
	base, admLog, caPEM := startChartAdmission(t, cl)
	registerEvictionGuard(t, cl, admission, base+"/validate-eviction", caPEM)

	store := readmit.Store{Client: agent, ReadByPatch: true}
	ctrl := readmit.Controller{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}
	rule := func(pod, node string) readmit.Rule {
		return readmit.Rule{Container: "main", From: "nvidia.com/mig-3g.20gb", To: "nvidia.com/mig-1g.5gb",
			Pod: pod, PodUID: pods[pod].UID, Node: node, At: time.Now().UTC().Truncate(time.Second)}
	}
	var steer error
	eventually(t, "the API server to call the recommendation guard", 30*time.Second, func() bool {
		_, steer = store.Record(ctx, "tenant", ctrl, rule("train-b", "gpu-a"))
		return steer != nil
	})
	refused("record a rule for another node's pod, naming itself", steer, "may record a rule only for a pod on its node")
	_, err = store.Record(ctx, "tenant", ctrl, rule("train-b", "gpu-b"))
	refused("record a rule for another node's pod, naming that node", err, "only for its own node")
	if _, err := admin.CoreV1().ConfigMaps("tenant").Get(ctx, readmit.StoreName("ReplicaSet", rs.Name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a recommendation was stored for tenant/train: %v", err)
	}
	changed, err := store.Record(ctx, "tenant", ctrl, rule("train-a", "gpu-a"))
	allowed("record a rule for its own node's pod", err)
	if !changed {
		t.Error("the rule for its own node's pod was not written")
	}
	// The stored recommendation reads back with the webhook's identity.
	rec, err := readmit.Store{Client: admin}.Get(ctx, "tenant", ctrl)
	if err != nil || rec == nil || len(rec.Rules) != 1 || rec.Rules[0].Node != "gpu-a" {
		t.Errorf("stored recommendation %+v %v, want the one rule of gpu-a", rec, err)
	}
	if log := readFile(admLog); !strings.Contains(log, "recommendation guard: refused a recommendation") {
		t.Errorf("the guard's log has no refusal:\n%s", log)
	}
}
