//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/migpro/migpro/demand"
	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/nodeview"
)

// The node view (issue 33, medium 6), on the real API server with the
// chart's RBAC and agent policies and the real migpro-admission: the agent
// of gpu-a can no longer read pods, ReplicaSets, Jobs or Namespaces from the
// API server (every pod's environment was readable), nor read a pod of
// another node by an empty patch; through the view, with a token of its
// ServiceAccount bound to gpu-a, it sees its own node's pods and pending
// MIG pods, environments stripped, an informer works as the demand source
// runs it, and it is refused another node's pod and the owners of nothing
// on its node.
func TestNodeViewKeepsReadsOnTheNode(t *testing.T) {
	cl := harness.StartCluster(t)
	ctx := context.Background()
	admin := cl.Client
	nodes := map[string]*corev1.Node{}
	for _, n := range []string{"gpu-a", "gpu-b"} {
		node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes[n] = node
	}
	agent := chartAgentOnNode(t, cl, "gpu-a")
	applyAgentPolicies(t, cl)

	// A tenant's workload: a ReplicaSet with a pod on each node, a Job with
	// a pod on gpu-b, a pending pod asking for MIG and one asking for none;
	// every container carries a secret in its environment.
	const secret = "s3cret-in-env"
	mustCreate(t, func() error {
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant",
			Labels: map[string]string{"migpro.dev/readmit-mode": "advise"}}}, metav1.CreateOptions{})
		return err
	})
	container := func(mig bool) corev1.Container {
		c := corev1.Container{Name: "main", Image: "trainer", Env: []corev1.EnvVar{{Name: "TOKEN", Value: secret}},
			Command: []string{"train", "--key=" + secret}}
		if mig {
			l := corev1.ResourceList{"nvidia.com/mig-3g.20gb": resource.MustParse("1")}
			c.Resources = corev1.ResourceRequirements{Limits: l, Requests: l}
		}
		return c
	}
	zero := int32(0)
	rs, err := admin.AppsV1().ReplicaSets("tenant").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "tenant"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{container(true)}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	job, err := admin.BatchV1().Jobs("tenant").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "tenant"},
		Spec: batchv1.JobSpec{Suspend: &yes, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{container(true)}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mkPod := func(name, node string, mig bool, labels map[string]string, owner *metav1.OwnerReference) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", Labels: labels},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{container(mig)}}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		if _, err := admin.CoreV1().Pods("tenant").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rsOwner := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}
	jobOwner := &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: &yes}
	mkPod("train-a", "gpu-a", true, map[string]string{"app": "train"}, rsOwner)
	mkPod("train-b", "gpu-b", true, map[string]string{"app": "train"}, rsOwner)
	mkPod("batch-b", "gpu-b", true, job.Spec.Selector.MatchLabels, jobOwner)
	mkPod("pending-mig", "", true, nil, nil)
	mkPod("pending-plain", "", false, nil, nil)

	// The API server: no read of pods, ReplicaSets, Jobs or Namespaces for
	// the agent's identity.
	refused := func(what string, err error, is func(error) bool, want string) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: allowed, want refused", what)
		case !is(err):
			t.Errorf("%s: %v, want another refusal", what, err)
		case want != "" && !strings.Contains(err.Error(), want):
			t.Errorf("%s: %v, want it to say %q", what, err, want)
		default:
			t.Logf("%s: refused: %v", what, err)
		}
	}
	_, err = agent.CoreV1().Pods("tenant").Get(ctx, "train-b", metav1.GetOptions{})
	refused("API server: get a pod in another namespace", err, apierrors.IsForbidden, "")
	_, err = agent.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	refused("API server: list every pod", err, apierrors.IsForbidden, "")
	_, err = agent.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: demand.PendingSelector})
	refused("API server: list pending pods", err, apierrors.IsForbidden, "")
	_, err = agent.AppsV1().ReplicaSets("tenant").Get(ctx, "train", metav1.GetOptions{})
	refused("API server: get a ReplicaSet", err, apierrors.IsForbidden, "")
	_, err = agent.BatchV1().Jobs("tenant").Get(ctx, "batch", metav1.GetOptions{})
	refused("API server: get a Job", err, apierrors.IsForbidden, "")
	_, err = agent.CoreV1().Namespaces().Get(ctx, "tenant", metav1.GetOptions{})
	refused("API server: get a Namespace", err, apierrors.IsForbidden, "")
	// An empty patch returns the whole pod: a read, refused but for its own
	// node's pods and pending MIG pods.
	emptyPatch := func(name string) (*corev1.Pod, error) {
		return agent.CoreV1().Pods("tenant").Patch(ctx, name, types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	}
	i := 0
	eventually(t, "the agent policies in force", 30*time.Second, func() bool {
		i++
		_, err := agent.CoreV1().Pods("tenant").Patch(ctx, "train-b", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"migpro.dev/probe":"`+strconv.Itoa(i)+`"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
	})
	for _, name := range []string{"train-b", "pending-plain"} {
		p, err := emptyPatch(name)
		refused("API server: read "+name+" with an empty patch", err, func(err error) bool { return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) },
			"may patch (and so read) only pods on its own node")
		if p != nil && len(p.Spec.Containers) > 0 && len(p.Spec.Containers[0].Env) > 0 {
			t.Errorf("the agent of gpu-a read %s's environment by an empty patch", name)
		}
	}
	for _, name := range []string{"train-a", "pending-mig"} {
		if _, err := emptyPatch(name); err != nil {
			t.Errorf("API server: an empty patch of %s (its own node's, or pending MIG): %v", name, err)
		}
	}

	// The node view, served by the real migpro-admission with the chart's
	// admission RBAC.
	base, admLog, _ := startChartAdmission(t, cl)
	onA := &authv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "gpu-a", UID: nodes["gpu-a"].UID}
	view := agentViewClient(t, cl, base, "gpu-a")

	stripped := func(what string, p *corev1.Pod) {
		t.Helper()
		for _, c := range p.Spec.Containers {
			if len(c.Env) > 0 || len(c.Command) > 0 {
				t.Errorf("%s: container %s keeps its env %v / command %v", what, c.Name, c.Env, c.Command)
			}
		}
	}
	names := func(l *corev1.PodList) []string {
		var out []string
		for i := range l.Items {
			out = append(out, l.Items[i].Name)
			stripped("listed pod "+l.Items[i].Name, &l.Items[i])
		}
		return out
	}
	mine, err := view.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=gpu-a"})
	if err != nil {
		t.Fatalf("view: list gpu-a's pods: %v (migpro-admission log: %s)", err, readFile(admLog))
	}
	if got := names(mine); len(got) != 1 || got[0] != "train-a" {
		t.Errorf("view: gpu-a's pods %v, want [train-a]", got)
	}
	pend, err := view.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: demand.PendingSelector})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(pend); len(got) != 1 || got[0] != "pending-mig" {
		t.Errorf("view: pending pods %v, want [pending-mig]", got)
	}
	_, err = view.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	refused("view: list every pod", err, apierrors.IsForbidden, "field selector")
	_, err = view.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=gpu-b"})
	refused("view: list gpu-b's pods", err, apierrors.IsForbidden, "field selector")
	p, err := view.CoreV1().Pods("tenant").Get(ctx, "train-a", metav1.GetOptions{})
	if err != nil {
		t.Errorf("view: get its own node's pod: %v", err)
	} else {
		stripped("train-a", p)
		if q := p.Spec.Containers[0].Resources.Limits["nvidia.com/mig-3g.20gb"]; q.String() != "1" {
			t.Errorf("view: train-a lost its MIG request: %v", p.Spec.Containers[0].Resources)
		}
	}
	for _, name := range []string{"train-b", "batch-b", "pending-plain"} {
		_, err = view.CoreV1().Pods("tenant").Get(ctx, name, metav1.GetOptions{})
		refused("view: get "+name, err, apierrors.IsNotFound, "not in the view of node gpu-a")
	}
	got, err := view.AppsV1().ReplicaSets("tenant").Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Errorf("view: the ReplicaSet of its own node's pod: %v", err)
	} else if c := got.Spec.Template.Spec.Containers[0]; len(c.Env) > 0 || len(c.Command) > 0 {
		t.Errorf("view: the ReplicaSet's template keeps its env %v / command %v", c.Env, c.Command)
	}
	_, err = view.BatchV1().Jobs("tenant").Get(ctx, "batch", metav1.GetOptions{})
	refused("view: a Job that owns nothing on gpu-a", err, apierrors.IsNotFound, "not in the view of node gpu-a")
	ns, err := view.CoreV1().Namespaces().Get(ctx, "tenant", metav1.GetOptions{})
	if err != nil || ns.Labels["migpro.dev/readmit-mode"] != "advise" {
		t.Errorf("view: namespace tenant %v %v, want its labels", ns, err)
	}
	_, err = view.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	refused("view: a namespace with no pod on gpu-a", err, apierrors.IsNotFound, "")
	_, err = view.CoreV1().Secrets("tenant").List(ctx, metav1.ListOptions{})
	refused("view: Secrets", err, apierrors.IsForbidden, "not served")

	// Other callers: a token for the API server, another ServiceAccount.
	apiToken := nodeViewClient(t, cl, base, "migpro-system", "migpro-agent", nil, onA)
	_, err = apiToken.CoreV1().Pods("tenant").Get(ctx, "train-a", metav1.GetOptions{})
	refused("view: the agent's API server token", err, apierrors.IsUnauthorized, "")
	mustCreate(t, func() error {
		_, err := admin.CoreV1().ServiceAccounts("tenant").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "snoop"}}, metav1.CreateOptions{})
		return err
	})
	snoop := nodeViewClient(t, cl, base, "tenant", "snoop", []string{nodeview.Audience}, onA)
	_, err = snoop.CoreV1().Pods("tenant").Get(ctx, "train-a", metav1.GetOptions{})
	refused("view: another ServiceAccount bound to gpu-a", err, apierrors.IsForbidden, "not the node agent")

	// An informer as the demand source runs it (list and watch through the
	// view, as a streamed list when the API server offers it) sees pending
	// MIG pods come and go.
	pods := view.CoreV1().Pods(metav1.NamespaceAll)
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = demand.PendingSelector
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = demand.PendingSelector
			return pods.Watch(ctx, o)
		},
	}, view), &corev1.Pod{}, 0, cache.Indexers{})
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	go inf.RunWithContext(ictx)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(sctx.Done(), inf.HasSynced) {
		t.Fatalf("the informer through the view never synced (migpro-admission log: %s)", readFile(admLog))
	}
	mkPod("pending-mig-2", "", true, nil, nil)
	mkPod("pending-plain-2", "", false, nil, nil)
	// pending-mig is bound to gpu-b: it leaves the pending view.
	if err := admin.CoreV1().Pods("tenant").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "pending-mig", Namespace: "tenant"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "gpu-b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the informer to hold pending-mig-2 alone", 30*time.Second, func() bool {
		k := inf.GetStore().ListKeys()
		return len(k) == 1 && k[0] == "tenant/pending-mig-2"
	})
	if obj, ok, _ := inf.GetStore().GetByKey("tenant/pending-mig-2"); ok {
		stripped("watched pending-mig-2", obj.(*corev1.Pod))
	}
}

// nodeViewClient is a clientset of the node view at base (migpro-admission,
// serving with a certificate of the cluster's CA) with a token of the
// ServiceAccount namespace/sa for audiences (nil: the API server's), bound
// to bound.
func nodeViewClient(t *testing.T, cl *harness.Cluster, base, namespace, sa string, audiences []string, bound *authv1.BoundObjectReference) kubernetes.Interface {
	t.Helper()
	tf := filepath.Join(t.TempDir(), "token")
	writeToken(t, cl, namespace, sa, audiences, bound, tf)
	rc, err := nodeview.ClientConfig{URL: base, CAFile: cl.CAFile, TokenFile: tf}.RESTConfig("e2e-" + sa)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// agentViewClient is the node view as the agent of node reads it: a token
// of migpro-agent for the view's audience, bound to node (as the
// DaemonSet's projected token is bound to its pod, and so to the node).
func agentViewClient(t *testing.T, cl *harness.Cluster, base, node string) kubernetes.Interface {
	t.Helper()
	return nodeViewClient(t, cl, base, "migpro-system", "migpro-agent", []string{nodeview.Audience}, boundToNode(t, cl, node))
}

// writeToken writes to file a token of the ServiceAccount namespace/sa for
// audiences (nil: the API server's), bound to bound.
func writeToken(t *testing.T, cl *harness.Cluster, namespace, sa string, audiences []string, bound *authv1.BoundObjectReference, file string) {
	t.Helper()
	tok, err := cl.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		ExpirationSeconds: ptrInt64(3600), Audiences: audiences, BoundObjectRef: bound}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s: %v", namespace, sa, err)
	}
	if err := os.WriteFile(file, []byte(tok.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
}

// boundToNode binds a token to node, as the DaemonSet's projected token is
// bound to its pod, and so to the node.
func boundToNode(t *testing.T, cl *harness.Cluster, node string) *authv1.BoundObjectReference {
	t.Helper()
	n, err := cl.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &authv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: n.UID}
}

// chartAgentRBACWithoutView is the agent's RBAC (rbac.yaml and
// rbac-readmit.yaml) as the chart renders it with the node view off
// (admission.nodeView.enabled=false): for tests of an agent that reads from
// the API server.
func chartAgentRBACWithoutView(t *testing.T) []byte {
	t.Helper()
	cmd := exec.Command(harness.Bin(t, "helm"), "template", "migpro", "deploy/helm/migpro", "--namespace", "migpro-system",
		"--set", "admission.certManager=false", "--set", "admission.generateCert=false", "--set", "admission.nodeView.enabled=false",
		"--show-only", "templates/rbac.yaml", "--show-only", "templates/rbac-readmit.yaml")
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template the agent's RBAC without the node view: %v", err)
	}
	return out
}

// agentViewFlags are the flags that send a migpro-agent of node to the node
// view at base, with a token of migpro-agent for the view bound to node.
func agentViewFlags(t *testing.T, cl *harness.Cluster, base, node string) []string {
	t.Helper()
	tf := filepath.Join(cl.Dir, "node-view-"+node+".token")
	writeToken(t, cl, "migpro-system", "migpro-agent", []string{nodeview.Audience}, boundToNode(t, cl, node), tf)
	return []string{"--node-view", base, "--node-view-ca", cl.CAFile, "--node-view-token", tf}
}
