package nodeview_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/migpro/migpro/demand"
	"github.com/migpro/migpro/nodeview"
	"github.com/migpro/migpro/nodeview/nodeviewtest"
)

const agentUser = "system:serviceaccount:migpro-system:migpro-agent"

// secretEnv is what no pod the view returns may carry.
const secretEnv = "s3cret-value"

func pod(name, node string, mig bool, owners ...metav1.OwnerReference) *corev1.Pod {
	res := corev1.ResourceRequirements{}
	if mig {
		l := corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("1")}
		res = corev1.ResourceRequirements{Limits: l, Requests: l}
	}
	c := corev1.Container{Name: "main", Image: "trainer", Resources: res,
		Env:     []corev1.EnvVar{{Name: "TOKEN", Value: secretEnv}},
		EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}},
		Command: []string{"train", "--password=" + secretEnv},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			HTTPHeaders: []corev1.HTTPHeader{{Name: "Authorization", Value: secretEnv}}}}}}
	phase := corev1.PodRunning
	if node == "" {
		phase = corev1.PodPending
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", UID: types.UID("uid-" + name), OwnerReferences: owners,
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"env":"` + secretEnv + `"}`, "migpro.dev/restart-seconds": "30"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{c}, InitContainers: []corev1.Container{c},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg",
				Env: []corev1.EnvVar{{Name: "TOKEN", Value: secretEnv}}, Args: []string{secretEnv}}}},
			Volumes: []corev1.Volume{{Name: "flex", VolumeSource: corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{
				Driver: "x", Options: map[string]string{"password": secretEnv}}}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func owner(kind, name string) metav1.OwnerReference {
	yes := true
	api := "apps/v1"
	if kind == "Job" {
		api = "batch/v1"
	}
	return metav1.OwnerReference{APIVersion: api, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: &yes}
}

// view is the view over a fake API server holding objs, served over TLS,
// and clients of it as gpu-a's agent (token "a"), another user ("other")
// and an agent whose token names no node ("unbound").
type view struct {
	api      *fake.Clientset
	reviewer *nodeviewtest.Reviewer
	url, ca  string
	dir      string
}

func newView(t *testing.T, objs ...runtime.Object) *view {
	t.Helper()
	api := fake.NewClientset(objs...)
	rv := nodeviewtest.New()
	rv.Agent("a", agentUser, "gpu-a")
	rv.Agent("other", "system:serviceaccount:tenant:default", "gpu-a")
	rv.Agent("unbound", agentUser, "")
	log := logrus.New()
	log.SetOutput(os.Stderr)
	srv, err := nodeview.New(api, rv, agentUser, nodeview.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewTLSServer(srv)
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &view{api: api, reviewer: rv, url: ts.URL, ca: ca, dir: dir}
}

// client is a clientset of the view built the way the agent builds it.
func (v *view) client(t *testing.T, token string) kubernetes.Interface {
	t.Helper()
	tf := filepath.Join(v.dir, "token-"+token)
	if err := os.WriteFile(tf, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := nodeview.ClientConfig{URL: v.url, CAFile: v.ca, TokenFile: tf, ServerName: "example.com"}.RESTConfig("test")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func assertStripped(t *testing.T, what string, s *corev1.PodSpec, ann map[string]string) {
	t.Helper()
	all := append(append([]corev1.Container{}, s.Containers...), s.InitContainers...)
	for _, c := range all {
		if c.Env != nil || c.EnvFrom != nil || c.Command != nil || c.Args != nil || c.LivenessProbe != nil {
			t.Errorf("%s: container %s keeps env/envFrom/command/args/probe: %+v", what, c.Name, c)
		}
	}
	for _, e := range s.EphemeralContainers {
		if e.Env != nil || e.Args != nil {
			t.Errorf("%s: ephemeral container keeps env or args", what)
		}
	}
	for _, vol := range s.Volumes {
		if vol.FlexVolume != nil {
			t.Errorf("%s: volume %s keeps its source", what, vol.Name)
		}
	}
	if _, ok := ann["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Errorf("%s: keeps kubectl's last-applied copy", what)
	}
}

func wantCode(t *testing.T, what string, err error, is func(error) bool, code string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: served, want %s", what, code)
	case !is(err):
		t.Errorf("%s: %v, want %s", what, err, code)
	case !strings.Contains(err.Error(), "node view: "):
		t.Errorf("%s: %v, want the view to say why", what, err)
	default:
		t.Logf("%s: %v", what, err)
	}
}

func TestViewListsAndGetsOnlyTheCallersPods(t *testing.T) {
	v := newView(t, pod("on-a", "gpu-a", true), pod("on-b", "gpu-b", true), pod("pending-mig", "", true), pod("pending-plain", "", false))
	ctx := context.Background()
	pods := v.client(t, "a").CoreV1().Pods("")

	_, err := pods.List(ctx, metav1.ListOptions{})
	wantCode(t, "list all pods", err, apierrors.IsForbidden, "forbidden")
	_, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=gpu-b"})
	wantCode(t, "list another node's pods", err, apierrors.IsForbidden, "forbidden")
	_, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!=gpu-a"})
	wantCode(t, "list with !=", err, apierrors.IsForbidden, "forbidden")
	_, err = pods.List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Pending"})
	wantCode(t, "list pending pods of every node", err, apierrors.IsForbidden, "forbidden")

	names := func(l *corev1.PodList) []string {
		var out []string
		for _, p := range l.Items {
			out = append(out, p.Name)
			assertStripped(t, "pod "+p.Name, &p.Spec, p.Annotations)
		}
		return out
	}
	mine, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=gpu-a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(mine); len(got) != 1 || got[0] != "on-a" {
		t.Errorf("gpu-a's pods: %v, want [on-a]", got)
	}
	pend, err := v.client(t, "a").CoreV1().Pods("tenant").List(ctx, metav1.ListOptions{FieldSelector: demand.PendingSelector})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(pend); len(got) != 1 || got[0] != "pending-mig" {
		t.Errorf("pending pods: %v, want [pending-mig] (not the one asking for no MIG)", got)
	}
	if len(pend.Items) == 1 && pend.Items[0].Spec.Containers[0].Resources.Limits == nil {
		t.Error("the pending pod lost its resources, which demand reads")
	}

	tenant := v.client(t, "a").CoreV1().Pods("tenant")
	for _, n := range []string{"on-a", "pending-mig"} {
		p, err := tenant.Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Errorf("get %s: %v", n, err)
			continue
		}
		assertStripped(t, "pod "+n, &p.Spec, p.Annotations)
		if p.Annotations["migpro.dev/restart-seconds"] != "30" {
			t.Errorf("get %s: the migpro.dev/ annotations are gone: %v", n, p.Annotations)
		}
	}
	for _, n := range []string{"on-b", "pending-plain", "missing"} {
		_, err := tenant.Get(ctx, n, metav1.GetOptions{})
		wantCode(t, "get "+n, err, apierrors.IsNotFound, "not found")
	}
	// Writes are not the view's.
	_, err = tenant.Patch(ctx, "on-a", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	wantCode(t, "patch through the view", err, apierrors.IsMethodNotSupported, "method not allowed")
	_, err = v.client(t, "a").CoreV1().Secrets("tenant").Get(ctx, "creds", metav1.GetOptions{})
	wantCode(t, "get a Secret", err, apierrors.IsForbidden, "forbidden")
}

func TestViewRefusesOtherCallers(t *testing.T) {
	v := newView(t, pod("on-a", "gpu-a", true))
	ctx := context.Background()
	get := func(token string) error {
		_, err := v.client(t, token).CoreV1().Pods("tenant").Get(ctx, "on-a", metav1.GetOptions{})
		return err
	}
	wantCode(t, "unknown token", get("forged"), apierrors.IsUnauthorized, "unauthorized")
	wantCode(t, "another ServiceAccount", get("other"), apierrors.IsForbidden, "forbidden")
	wantCode(t, "the agent's token bound to no node", get("unbound"), apierrors.IsForbidden, "forbidden")
	v.reviewer.Err = errors.New("API server down")
	wantCode(t, "review fails", get("a"), apierrors.IsInternalError, "internal error")
	v.reviewer.Err = nil
	if err := get("a"); err != nil {
		t.Errorf("the agent of gpu-a gets its pod: %v", err)
	}
}

func TestViewGetsOwnersOfTheNodesPodsOnly(t *testing.T) {
	tmpl := pod("tmpl", "", true)
	rsOf := func(name string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", UID: types.UID("uid-" + name)},
			Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}}}
	}
	jobOf := func(name string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", UID: types.UID("uid-" + name)},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}}}
	}
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"migpro.dev/readmit-mode": "evict"},
			Annotations: map[string]string{"owner": "finance"}}}
	}
	v := newView(t, pod("on-a", "gpu-a", true, owner("ReplicaSet", "train-a")), pod("job-a", "gpu-a", true, owner("Job", "job-a")),
		pod("on-b", "gpu-b", true, owner("ReplicaSet", "train-b")), pod("job-b", "gpu-b", true, owner("Job", "job-b")),
		rsOf("train-a"), rsOf("train-b"), jobOf("job-a"), jobOf("job-b"), ns("tenant"), ns("elsewhere"))
	ctx := context.Background()
	c := v.client(t, "a")

	rs, err := c.AppsV1().ReplicaSets("tenant").Get(ctx, "train-a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ReplicaSet of a pod on gpu-a: %v", err)
	}
	assertStripped(t, "ReplicaSet template", &rs.Spec.Template.Spec, rs.Spec.Template.Annotations)
	job, err := c.BatchV1().Jobs("tenant").Get(ctx, "job-a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Job of a pod on gpu-a: %v", err)
	}
	assertStripped(t, "Job template", &job.Spec.Template.Spec, job.Spec.Template.Annotations)
	_, err = c.AppsV1().ReplicaSets("tenant").Get(ctx, "train-b", metav1.GetOptions{})
	wantCode(t, "a ReplicaSet with pods on gpu-b only", err, apierrors.IsNotFound, "not found")
	_, err = c.BatchV1().Jobs("tenant").Get(ctx, "job-b", metav1.GetOptions{})
	wantCode(t, "a Job with pods on gpu-b only", err, apierrors.IsNotFound, "not found")
	_, err = c.AppsV1().ReplicaSets("tenant").List(ctx, metav1.ListOptions{})
	wantCode(t, "list ReplicaSets", err, apierrors.IsForbidden, "forbidden")

	n, err := c.CoreV1().Namespaces().Get(ctx, "tenant", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the namespace of a pod on gpu-a: %v", err)
	}
	if n.Labels["migpro.dev/readmit-mode"] != "evict" || len(n.Annotations) != 0 {
		t.Errorf("namespace tenant: labels %v annotations %v, want its labels only", n.Labels, n.Annotations)
	}
	_, err = c.CoreV1().Namespaces().Get(ctx, "elsewhere", metav1.GetOptions{})
	wantCode(t, "a namespace with no pod on gpu-a", err, apierrors.IsNotFound, "not found")
}

// An informer (list, then watch from the list's resource version) works
// through the view as the demand source runs it, and sees only pending MIG
// pods, stripped.
func TestViewWatchFeedsAnInformer(t *testing.T) {
	v := newView(t, pod("pending-mig", "", true), pod("pending-plain", "", false))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := v.client(t, "a")
	pods := c.CoreV1().Pods(metav1.NamespaceAll)
	// The fake API server behind the view cannot stream a list as a watch
	// (the real one can: e2e), so the informer lists, then watches.
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = demand.PendingSelector
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = demand.PendingSelector
			return pods.Watch(ctx, o)
		},
	}, v.api), &corev1.Pod{}, 0, cache.Indexers{})
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer never synced")
	}
	keys := func() []string { return inf.GetStore().ListKeys() }
	if k := keys(); len(k) != 1 || k[0] != "tenant/pending-mig" {
		t.Fatalf("informer after list: %v, want [tenant/pending-mig]", k)
	}
	for _, p := range []*corev1.Pod{pod("new-mig", "", true), pod("new-plain", "", false), pod("new-on-b", "gpu-b", true)} {
		if _, err := v.api.CoreV1().Pods("tenant").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.api.CoreV1().Pods("tenant").Delete(ctx, "pending-mig", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		k := keys()
		if len(k) == 1 && k[0] == "tenant/new-mig" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("informer after watch: %v, want [tenant/new-mig]", k)
		}
		time.Sleep(20 * time.Millisecond)
	}
	obj, _, _ := inf.GetStore().GetByKey("tenant/new-mig")
	p := obj.(*corev1.Pod)
	assertStripped(t, "watched pod", &p.Spec, p.Annotations)
	if p.Spec.Containers[0].Resources.Limits == nil {
		t.Error("the watched pod lost its resources")
	}
}
