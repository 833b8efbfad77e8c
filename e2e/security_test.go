//go:build e2e

package e2e

// The agent's cluster privileges, tried with its real credentials on the
// real v1.32 API server: RBAC from deploy/kubernetes/rbac*.yaml, the
// ValidatingAdmissionPolicies of deploy/kubernetes/agent-policy.yaml and
// the eviction guard of deploy/kubernetes/admission.yaml.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/migpro/migpro/e2e/harness"
)

func TestAgentPrivilegesLimitedByTheAPIServer(t *testing.T) {
	cl := harness.StartCluster(t)
	ctx := context.Background()
	admin := cl.Client

	// Two nodes (objects only): the agent's own, and another one.
	for _, n := range []string{"gpu-a", "gpu-b"} {
		mustCreate(t, func() error {
			_, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"team": "x"}}}, metav1.CreateOptions{})
			return err
		})
	}
	agent := chartAgentOnNode(t, cl, "gpu-a")

	// Objects the agent will try to change, made by the admin.
	mustCreate(t, func() error {
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
		return err
	})
	for _, name := range []string{"victim", "canary"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: map[string]string{"app": "v"}, Annotations: map[string]string{"other.io/keep": "1"}},
			Spec:       corev1.PodSpec{NodeName: "gpu-b", Containers: []corev1.Container{{Name: "c", Image: "busybox:good"}}},
		}
		mustCreate(t, func() error {
			_, err := admin.CoreV1().Pods("team").Create(ctx, pod, metav1.CreateOptions{})
			return err
		})
	}
	// RBAC alone (patch on pods) lets the agent's identity change a pod's
	// image: the policies below are what stops it.
	if _, err := agent.CoreV1().Pods("team").Patch(ctx, "canary", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"c","image":"evil:latest"}]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("without the policies, the agent's image patch: %v (want allowed: this test must see the policies make the difference)", err)
	}
	applyAgentPolicies(t, cl)
	mustCreate(t, func() error {
		_, err := admin.CoreV1().ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "migpro-readmit-foreign"}}, metav1.CreateOptions{})
		return err
	})

	// The API server loads each policy in its own time: wait until all
	// three refuse a dry run (which admission sees, and which changes
	// nothing), each with a new value (a repeated patch is a no-op).
	dry := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	for _, probe := range []struct {
		policy string
		try    func(i int) error
	}{
		{"migpro-agent-pods", func(i int) error {
			_, err := agent.CoreV1().Pods("team").Patch(ctx, "canary", types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"other.io/probe":"`+strconv.Itoa(i)+`"}}}`), dry)
			return err
		}},
		{"migpro-agent-configmaps", func(i int) error {
			_, err := agent.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: "probe-" + strconv.Itoa(i), Labels: map[string]string{"app.kubernetes.io/managed-by": "migpro"}}},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"migpro-agent-nodes", func(i int) error {
			_, err := agent.CoreV1().Nodes().Patch(ctx, "gpu-a", types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"probe":"`+strconv.Itoa(i)+`"}}}`), dry)
			return err
		}},
	} {
		i, err := 0, error(nil)
		if !within(30*time.Second, func() bool {
			i++
			err = probe.try(i)
			return (apierrors.IsInvalid(err) || apierrors.IsForbidden(err)) && strings.Contains(err.Error(), "'"+probe.policy+"'")
		}) {
			t.Fatalf("policy %s not in force within 30s: a dry run it should refuse got %v", probe.policy, err)
		}
	}
	patchPod := func(body string) error {
		_, err := agent.CoreV1().Pods("team").Patch(ctx, "victim", types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	// A pod on the agent's own node: the only kind it may annotate.
	mustCreate(t, func() error {
		_, err := admin.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team"},
			Spec: corev1.PodSpec{NodeName: "gpu-a", Containers: []corev1.Container{{Name: "c", Image: "busybox:good"}}}}, metav1.CreateOptions{})
		return err
	})
	patchMine := func(body string) error {
		_, err := agent.CoreV1().Pods("team").Patch(ctx, "mine", types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}

	refused := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: allowed, want refused", what)
		} else if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want forbidden or invalid", what, err)
		} else {
			t.Logf("%s: refused: %v", what, err)
		}
	}
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v, want allowed", what, err)
		}
	}

	// Pods.
	allowed("pod on its node: add a migpro.dev/ annotation", patchMine(`{"metadata":{"annotations":{"migpro.dev/predicted-oom":"x"}}}`))
	allowed("pod on its node: remove a migpro.dev/ annotation", patchMine(`{"metadata":{"annotations":{"migpro.dev/predicted-oom":null}}}`))
	refused("pod on another node: add a migpro.dev/ annotation", patchPod(`{"metadata":{"annotations":{"migpro.dev/predicted-oom":"x"}}}`))
	refused("pod: change another annotation", patchPod(`{"metadata":{"annotations":{"other.io/keep":"2"}}}`))
	refused("pod: remove another annotation", patchPod(`{"metadata":{"annotations":{"other.io/keep":null}}}`))
	refused("pod: change a label", patchPod(`{"metadata":{"labels":{"app":"evil"}}}`))
	_, err := agent.CoreV1().Pods("team").Patch(ctx, "victim", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"c","image":"evil:latest"}]}}`), metav1.PatchOptions{})
	refused("pod: change the image", err)
	cur, err := admin.CoreV1().Pods("team").Get(ctx, "victim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Annotations["migpro.dev/x"] = "1"
	_, err = agent.CoreV1().Pods("team").Update(ctx, cur, metav1.UpdateOptions{})
	refused("pod: update (PUT), even of a migpro.dev/ annotation", err)
	if got, _ := admin.CoreV1().Pods("team").Get(ctx, "victim", metav1.GetOptions{}); got.Spec.Containers[0].Image != "busybox:good" || got.Labels["app"] != "v" || got.Annotations["other.io/keep"] != "1" {
		t.Errorf("pod after the agent's attempts: %+v %v", got.Labels, got.Annotations)
	}

	// ConfigMaps.
	cm := func(ns, name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: map[string]string{"k": "v"}}
	}
	managed := map[string]string{"app.kubernetes.io/managed-by": "migpro"}
	_, err = agent.CoreV1().ConfigMaps("kube-system").Create(ctx, cm("kube-system", "kube-proxy-evil", managed), metav1.CreateOptions{})
	refused("configmap: create kube-system/kube-proxy-evil", err)
	_, err = agent.CoreV1().ConfigMaps("team").Create(ctx, cm("team", "migpro-readmit-deployment-x", nil), metav1.CreateOptions{})
	refused("configmap: create migpro-readmit-* without the managed-by label", err)
	made, err := agent.CoreV1().ConfigMaps("team").Create(ctx, cm("team", "migpro-readmit-deployment-x", managed), metav1.CreateOptions{})
	allowed("configmap: create a labelled migpro-readmit-*", err)
	if made != nil {
		made.Data["k"] = "w"
		_, err = agent.CoreV1().ConfigMaps("team").Update(ctx, made, metav1.UpdateOptions{})
		allowed("configmap: update its own", err)
	}
	foreign, err := admin.CoreV1().ConfigMaps("team").Get(ctx, "migpro-readmit-foreign", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	foreign.Labels = managed
	_, err = agent.CoreV1().ConfigMaps("team").Update(ctx, foreign, metav1.UpdateOptions{})
	refused("configmap: take over an unlabelled migpro-readmit-* by labelling it", err)

	// Nodes.
	patchNode := func(name, body string) error {
		_, err := agent.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	allowed("node: its own, a migpro.dev/ label", patchNode("gpu-a", `{"metadata":{"labels":{"migpro.dev/profiles":"1g.5gb"}}}`))
	refused("node: its own, another label", patchNode("gpu-a", `{"metadata":{"labels":{"team":"evil"}}}`))
	refused("node: its own, a taint", patchNode("gpu-a", `{"spec":{"taints":[{"key":"evil","effect":"NoSchedule"}]}}`))
	refused("node: another node, a migpro.dev/ label", patchNode("gpu-b", `{"metadata":{"labels":{"migpro.dev/profiles":"x"}}}`))

	// A token not bound to a node cannot touch any node.
	unbound, err := kubernetes.NewForConfig(cl.RESTConfig(t, filepath.Join(cl.Dir, "migpro-agent.kubeconfig")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = unbound.CoreV1().Nodes().Patch(ctx, "gpu-a", types.MergePatchType, []byte(`{"metadata":{"labels":{"migpro.dev/profiles":"y"}}}`), metav1.PatchOptions{})
	refused("node: a token bound to no node", err)

	checkEvictionGuard(t, cl, agent, unbound)
}

// checkEvictionGuard: RBAC lets the agent's identity evict any pod; with
// migpro-admission's eviction guard registered (admission.yaml), the API
// server refuses the agent's eviction of a pod on another node, and of any
// pod with a token bound to no node, and lets it evict a pod on its own node.
func checkEvictionGuard(t *testing.T, cl *harness.Cluster, agent, unbound kubernetes.Interface) {
	ctx := context.Background()
	for name, node := range map[string]string{"on-a": "gpu-a", "on-b": "gpu-b"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox:good"}}}}
		mustCreate(t, func() error {
			_, err := cl.Client.CoreV1().Pods("team").Create(ctx, pod, metav1.CreateOptions{})
			return err
		})
	}
	// evict evicts team/<name> as the agent does: with the pod's UID as a
	// precondition (none when noUID).
	evictAs := func(cs kubernetes.Interface, name string, dryRun, noUID bool) error {
		p, err := cl.Client.CoreV1().Pods("team").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}, DeleteOptions: &metav1.DeleteOptions{}}
		if !noUID {
			ev.DeleteOptions.Preconditions = &metav1.Preconditions{UID: &p.UID}
		}
		if dryRun {
			ev.DeleteOptions.DryRun = []string{metav1.DryRunAll}
		}
		return cs.CoreV1().Pods("team").EvictV1(ctx, ev)
	}
	evict := func(cs kubernetes.Interface, name string, dryRun bool) error { return evictAs(cs, name, dryRun, false) }
	// Without the guard, RBAC alone lets the agent evict a pod on another
	// node (dry run: the pod stays).
	if err := evict(agent, "on-b", true); err != nil {
		t.Fatalf("without the eviction guard, the agent's (dry-run) eviction of a pod on another node: %v (want allowed: this test must see the guard make the difference)", err)
	}

	root := repoRoot()
	admission := filepath.Join(root, "deploy/kubernetes/admission.yaml")
	base, admLog, caPEM := startChartAdmission(t, cl)
	registerEvictionGuard(t, cl, admission, base+"/validate-eviction", caPEM)

	// The API server loads the webhook within a moment: retry the dry run
	// until it is refused.
	var err2 error
	eventually(t, "the API server to call the eviction guard", 30*time.Second, func() bool {
		err2 = evict(agent, "on-b", true)
		return err2 != nil
	})
	const want = "the migpro agent of node gpu-a may evict only pods on its own node; pod team/on-b is not on it"
	if !apierrors.IsForbidden(err2) || !strings.Contains(err2.Error(), want) {
		t.Errorf("eviction of a pod on another node: %v, want forbidden saying %q", err2, want)
	} else {
		t.Logf("eviction of a pod on another node: refused: %v", err2)
	}
	err := evict(agent, "on-b", false)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("eviction of a pod on another node: %v, want forbidden saying %q", err, want)
	}
	err = evict(unbound, "on-a", false)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "its token names no node") {
		t.Errorf("eviction with a token bound to no node: %v, want forbidden", err)
	} else {
		t.Logf("eviction with a token bound to no node: refused: %v", err)
	}
	// Without the pod's UID as a precondition, the guard would check one pod
	// and the API server might evict another of the same name.
	err = evictAs(agent, "on-a", true, true)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "must carry the pod's UID as a precondition") {
		t.Errorf("eviction without the pod's UID: %v, want forbidden", err)
	}
	// The DaemonSet's agent authenticates with its pod's projected token,
	// bound to the pod: the API server names the pod's node for it too.
	podAgent := podBoundAgent(t, cl, "gpu-a")
	err = evict(podAgent, "on-b", true)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("eviction of a pod on another node with a pod-bound token: %v, want forbidden saying %q", err, want)
	}
	if err := evict(podAgent, "on-a", true); err != nil {
		t.Errorf("(dry-run) eviction of a pod on its own node with a pod-bound token: %v, want allowed", err)
	}
	if err := evict(agent, "on-a", false); err != nil {
		t.Errorf("eviction of a pod on the agent's own node: %v, want allowed", err)
	}
	a, errA := cl.Client.CoreV1().Pods("team").Get(ctx, "on-a", metav1.GetOptions{})
	if errA == nil && a.DeletionTimestamp == nil || errA != nil && !apierrors.IsNotFound(errA) {
		t.Errorf("pod on-a not evicted: %v", errA)
	}
	b, err := cl.Client.CoreV1().Pods("team").Get(ctx, "on-b", metav1.GetOptions{})
	if err != nil || b.DeletionTimestamp != nil {
		t.Errorf("pod on-b must stay: %v %v", err, b)
	}
	if log := readFile(admLog); !strings.Contains(log, "refused an eviction of a pod on another node") {
		t.Errorf("the guard's log has no refusal:\n%s", log)
	}
}

// nodeBoundAgent returns a clientset for the migpro-agent ServiceAccount
// with a token bound to the node (the API server then names the node in
// the request's user info, as it does for a DaemonSet pod's token).
func nodeBoundAgent(t *testing.T, cl *harness.Cluster, nodeName string) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	node, err := cl.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cl.Client.CoreV1().ServiceAccounts("migpro-system").CreateToken(ctx, "migpro-agent",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(3600),
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: nodeName, UID: node.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node-bound token: %v", err)
	}
	return tokenClient(t, cl, "migpro-agent-"+nodeName, tok.Status.Token)
}

// chartAgentOnNode gives the agent's ServiceAccount the RBAC of
// deploy/kubernetes (rbac.yaml and rbac-readmit.yaml, as the chart renders
// them) and returns its clientset with a token bound to node nodeName, as
// the agent of that node holds it.
func chartAgentOnNode(t *testing.T, cl *harness.Cluster, nodeName string) kubernetes.Interface {
	t.Helper()
	root := repoRoot()
	rbac := manifestDocs(t, filepath.Join(root, "deploy/kubernetes/rbac.yaml"), nil)
	rbac = append(append(rbac, "\n---\n"...), manifestDocs(t, filepath.Join(root, "deploy/kubernetes/rbac-readmit.yaml"), nil)...)
	serviceAccountKubeconfig(t, cl, "migpro-agent", rbac)
	return nodeBoundAgent(t, cl, nodeName)
}

// applyAgentPolicies applies the agent's ValidatingAdmissionPolicies
// (deploy/kubernetes/agent-policy.yaml).
func applyAgentPolicies(t *testing.T, cl *harness.Cluster) {
	t.Helper()
	if r := cl.Kubectl(t, "apply", "-f", filepath.Join(repoRoot(), "deploy/kubernetes/agent-policy.yaml")); r.ExitCode != 0 || r.Err != nil {
		t.Fatalf("kubectl apply agent-policy.yaml: exit %d %v\n%s", r.ExitCode, r.Err, r.Combined())
	}
}

// tokenClient writes a kubeconfig <name>.kubeconfig with token and returns
// its clientset.
func tokenClient(t *testing.T, cl *harness.Cluster, name, token string) kubernetes.Interface {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cl.Server, CertificateAuthority: cl.CAFile}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "agent"}
	kc.CurrentContext = "e2e"
	path := filepath.Join(cl.Dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return cl.Clientset(t, path)
}

// podBoundAgent returns a clientset for the migpro-agent ServiceAccount
// with a token bound to a pod of that account on the node, as the
// DaemonSet's projected token is.
func podBoundAgent(t *testing.T, cl *harness.Cluster, nodeName string) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	no := false
	pod, err := cl.Client.CoreV1().Pods("migpro-system").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "migpro-agent-" + nodeName, Namespace: "migpro-system"},
		Spec: corev1.PodSpec{NodeName: nodeName, ServiceAccountName: "migpro-agent", AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "agent", Image: "migpro-agent:e2e"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("agent pod: %v", err)
	}
	tok, err := cl.Client.CoreV1().ServiceAccounts("migpro-system").CreateToken(ctx, "migpro-agent",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(3600),
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod-bound token: %v", err)
	}
	return tokenClient(t, cl, "migpro-agent-pod-"+nodeName, tok.Status.Token)
}

// TestHookPodmanReadOnlyRootfs: `podman run --read-only` with the hook was
// refused as an "unsafe container rootfs … read-only file system". A
// read-only rootfs is not an attack: the container starts without
// telemetry, the hook logs one line saying so, and the agent keeps no
// registration.
func TestHookPodmanReadOnlyRootfs(t *testing.T) {
	e := newHookEnv(t)
	pm := harness.Podman(t)
	hooksDir, logFile := e.hooksDir(t)
	// The image's /run is read-only (and podman adds no tmpfs over it): the
	// mount point /run/migpro cannot be made. podman's own file there exists
	// already, as in an image built for read-only use.
	rootfs := e.rootfs(t)
	run := filepath.Join(rootfs, "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", run).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", run).Run() })
	if err := os.WriteFile(filepath.Join(run, ".containerenv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "remount,ro", run).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v %s", err, out)
	}
	r := pm.Run(t, "--hooks-dir", hooksDir, "run", "--rm", "--network", "none", "--read-only", "--read-only-tmpfs=false",
		"--env", "NVIDIA_VISIBLE_DEVICES="+hookMIG,
		"--rootfs", rootfs, "/app/pattern", "alloc:1048576", "free:0")
	if r.ExitCode != 0 || r.Err != nil {
		t.Fatalf("container with a read-only rootfs did not run: exit %d %v\n%s\nhook log: %s", r.ExitCode, r.Err, r.Combined(), readFile(logFile))
	}
	b, _ := os.ReadFile(logFile)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "without telemetry") || !strings.Contains(lines[0], "read-only") {
		t.Fatalf("hook log %q: want one line saying the container starts without telemetry on a read-only rootfs", b)
	}
	if top := e.top(t); len(top.Containers) != 0 {
		t.Errorf("registration left behind: %+v", top)
	}
}
