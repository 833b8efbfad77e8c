//go:build e2e

package e2e

// Readmission through claims (issue 31, item 5) on a real node: the agent
// runs the DRA driver and readmission in evict mode, a Deployment's pod gets
// its GPU from a ResourceClaimTemplate, its container grows on the simulated
// GPU until the predictor marks it, the agent records the recommendation and
// evicts the pod, and the claim webhook moves the replacement's claim to the
// recommended profile, which the scheduler allocates and the kubelet
// prepares.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/readmit"
)

// The grower: 4 GiB at once, then 10 MiB every 400 ms (as TestLabRun's
// workload), then it sleeps. On a 1g.5gb (4864 MiB) the predictor marks it
// after about 24 s of growth; on the profile it recommends the same growth
// fits.
var growSteps = []string{fmt.Sprintf("alloc:%d", runBaseBytes), fmt.Sprintf("grow:%d:%d:%d", runStepBytes, runSteps, runStepMillis), "sleep:3600000"}

// TestDRAReadmitDeployment: a readmission moves a Deployment's pod to a
// larger profile through its claim, through the real API server, scheduler,
// kubelet, containerd, the agent (--dra --readmit-mode evict, hook and
// shim in the CDI spec) and migpro-admission's claim webhook as the chart
// registers it with dra.enabled. The pod's GPU comes from a
// ResourceClaimTemplate; the replacement's claim is moved.
func TestDRAReadmitDeployment(t *testing.T) {
	runDRAReadmit(t, false)
}

// TestDRAReadmitExtendedResource: the same for a pod that asks for
// nvidia.com/mig-1g.5gb: 1, served through DRA by the DeviceClass with that
// extendedResourceName (no device plugins): the pod webhook's rewrite of
// the limit moves it, and the scheduler's claim follows the new name.
func TestDRAReadmitExtendedResource(t *testing.T) {
	runDRAReadmit(t, true)
}

// runDRAReadmit runs the readmission of the trainer Deployment on a DRA
// node: through a claim template, or (extended) through the extended
// resource name with the device plugins off.
func runDRAReadmit(t *testing.T, extended bool) {
	e := newHookEnv(t) // the hook, the shim and the pattern program
	cl := harness.StartCluster(t)
	c := harness.StartContainerd(t)
	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c, Cluster: cl})
	const image = "migpro-e2e.test/grow:1"
	archive := filepath.Join(t.TempDir(), "grow.tar")
	if err := harness.WriteOCIArchive(archive, harness.ImageSpec{Name: image, Rootfs: e.rootfs(t), Entrypoint: []string{"/app/pattern"}}); err != nil {
		t.Fatal(err)
	}
	c.ImportArchive(t, "k8s.io", archive)
	cl.WaitNodeReady(t, k.NodeName, 60*time.Second)
	ctx := context.Background()

	// The webhooks from the manifests, the claim webhook and the DRA
	// classes and RBAC from the chart with dra.enabled.
	st := startReadmitStack(t, cl, "deploy/kubernetes/rbac.yaml")
	chart := renderDRAChart(t, cl)
	serviceAccountKubeconfig(t, cl, "migpro-agent", chart.dra)
	registerClaimWebhook(t, st, chart.claimWebhook)
	nodeBoundAgent(t, cl, k.NodeName) // writes the node-bound kubeconfig
	agentKC := filepath.Join(cl.Dir, "migpro-agent-"+k.NodeName+".kubeconfig")
	plugins := harness.DevicePluginDir
	if extended {
		plugins = "" // the scheduler serves an extended resource through DRA only where no plugin does
	}
	// Its reads of pods and their owners go through the node view (the
	// chart's RBAC grants it none).
	a := startAgent(t, "a100-40gb", append([]string{"--plugin-dir", plugins, "--pod-resources", k.PodResourcesSocket(),
		"--kubeconfig", agentKC, "--node-name", k.NodeName, "--assign-grace", "5s",
		"--dra", "--dra-kubelet-dir", k.RootDir, "--readmit-mode", "evict",
		"--hook", e.hookBin, "--shim", e.art.Shim, "--poll-every", "100ms"}, agentViewFlags(t, cl, st.view, k.NodeName)...)...)
	n := &draNode{cl: cl, k: k, a: a}
	eventually(t, "the agent's ResourceSlices", 60*time.Second, func() bool { return len(n.devices(t)) > 0 })

	// The Deployment: its pod's GPU comes from a template for a 1g.5gb, as
	// docs/dra.md writes it (the base class and a profile selector), or
	// from the extended resource.
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: readmitNS}}, metav1.CreateOptions{})
		return err
	})
	tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "mig-1g-5gb", Namespace: readmitNS},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "mig", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: readmit.DefaultDeviceClass,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["migpro.dev"].profile == "1g.5gb"`}}}}}}}}}}
	if _, err := cl.Client.ResourceV1().ResourceClaimTemplates(readmitNS).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaimTemplate: %v", err)
	}
	createClaimTrainer(t, cl, image, tmpl.Name, extended)

	old := waitTrainerPod(t, cl.Client, "")
	old = waitRunningOn(t, cl.Client, old.Name, k.NodeName)
	if p := allocatedProfile(t, n, old); p != "1g.5gb" {
		t.Fatalf("the first pod's claim is allocated a %q, want 1g.5gb", p)
	}
	seen := "readmit claim webhook: no recommendation"
	if extended {
		seen = "no recommendation for the pod's controller"
	}
	eventually(t, "the API server to show the first pod's request to the webhook", 30*time.Second, func() bool {
		return strings.Contains(readFile(st.admLog), seen)
	})
	t.Logf("first pod %s runs on a 1g.5gb through DRA; growing", old.Name)

	// The container grows; the agent marks and evicts it.
	var marked time.Time
	eventually(t, "the agent to evict the grown pod", 120*time.Second, func() bool {
		evs := podEvents(t, cl.Client, old.Name)
		if evs[readmit.ReasonEvicted] == "" {
			return false
		}
		marked = time.Now()
		t.Logf("events on %s: %v", old.Name, evs)
		return true
	})
	rec, err := readmit.Store{Client: cl.Client}.Get(ctx, readmitNS, readmit.Controller{APIVersion: "apps/v1", Kind: "Deployment", Name: "trainer", UID: deploymentUID(t, cl)})
	if err != nil || rec == nil || len(rec.Rules) != 1 {
		t.Fatalf("recommendation for the Deployment: %+v %v", rec, err)
	}
	rule := rec.Rules[0]
	if rule.Container != "main" || rule.From != res1g5 || rule.Node != k.NodeName || rule.PodUID != old.UID {
		t.Fatalf("rule %+v, want main from %s, on %s, for pod %s", rule, res1g5, k.NodeName, old.UID)
	}
	want := strings.TrimPrefix(rule.To, "nvidia.com/mig-")
	t.Logf("recommended %s → %s (forecast %d bytes, %s)", rule.From, rule.To, rule.ForecastBytes, rule.Reason)

	// The replacement is allocated the larger profile.
	repl := waitTrainerPod(t, cl.Client, old.UID)
	repl = waitRunningOn(t, cl.Client, repl.Name, k.NodeName)
	ran := time.Since(marked)
	got := allocatedProfile(t, n, repl)
	if got != want || got == "1g.5gb" {
		t.Fatalf("the replacement's claim is allocated a %q, want the recommended %q", got, want)
	}
	if !strings.Contains(readFile(st.admLog), "eviction of a pod on the agent's own node allowed") {
		t.Errorf("the eviction guard did not see the eviction:\n%s", readFile(st.admLog))
	}
	if extended {
		// The pod webhook moved the limit; the claim webhook had nothing to do.
		if q := repl.Spec.Containers[0].Resources.Limits[corev1.ResourceName(rule.To)]; q.String() != "1" ||
			!strings.Contains(repl.Annotations[readmit.AnnotationReadmitted], rule.To) {
			t.Errorf("replacement limits %v annotations %v, want %s", repl.Spec.Containers[0].Resources.Limits, repl.Annotations, rule.To)
		}
	} else {
		claim := podClaim(t, cl, repl)
		var rws []readmit.ClaimRewrite
		if err := json.Unmarshal([]byte(claim.Annotations[readmit.AnnotationReadmitted]), &rws); err != nil || len(rws) != 1 || rws[0].To != rule.To {
			t.Errorf("claim %s annotation %q: %+v %v", claim.Name, claim.Annotations[readmit.AnnotationReadmitted], rws, err)
		}
		if !strings.Contains(readFile(st.admLog), "claim request moved to the recommended profile") {
			t.Errorf("the claim webhook's log has no move:\n%s", readFile(st.admLog))
		}
		// The template and the pod spec are unchanged: only the claim moved.
		if len(repl.Spec.ResourceClaims) != 1 || *repl.Spec.ResourceClaims[0].ResourceClaimTemplateName != tmpl.Name {
			t.Errorf("replacement's resourceClaims %+v", repl.Spec.ResourceClaims)
		}
	}
	t.Logf("DRA-READMIT (extended resource %v): %s on 1g.5gb → %s on %s; eviction to replacement Running %v",
		extended, old.Name, repl.Name, got, ran.Round(time.Millisecond))
}

// createClaimTrainer creates the trainer Deployment: one pod whose
// container main runs the grower on a claim from template, or (extended)
// on nvidia.com/mig-1g.5gb: 1.
func createClaimTrainer(t *testing.T, cl *harness.Cluster, image, template string, extended bool) {
	t.Helper()
	labels := map[string]string{"app": "trainer"}
	replicas, grace, no := int32(1), int64(1), false
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: readmitNS},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				HostNetwork: true, TerminationGracePeriodSeconds: &grace, AutomountServiceAccountToken: &no,
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}},
				Containers: []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: corev1.PullNever,
					Command:   append([]string{"/app/pattern"}, growSteps...),
					Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
			}}},
	}
	if extended {
		spec := &d.Spec.Template.Spec
		spec.ResourceClaims = nil
		spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{res1g5: resource.MustParse("1")}}
	}
	if _, err := cl.Client.AppsV1().Deployments(readmitNS).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deploymentUID(t *testing.T, cl *harness.Cluster) types.UID {
	t.Helper()
	d, err := cl.Client.AppsV1().Deployments(readmitNS).Get(context.Background(), "trainer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.UID
}

// podClaim is the claim the resourceclaim controller made for pod's "gpu",
// or the one the scheduler made for its extended resource.
func podClaim(t *testing.T, cl *harness.Cluster, pod *corev1.Pod) *resourceapi.ResourceClaim {
	t.Helper()
	var name string
	eventually(t, "the claim of "+pod.Name, 30*time.Second, func() bool {
		p, err := cl.Client.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, s := range p.Status.ResourceClaimStatuses {
			if s.Name == "gpu" && s.ResourceClaimName != nil {
				name = *s.ResourceClaimName
			}
		}
		if x := p.Status.ExtendedResourceClaimStatus; x != nil {
			name = x.ResourceClaimName
		}
		return name != ""
	})
	claim, err := cl.Client.ResourceV1().ResourceClaims(pod.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("claim %s: %v", name, err)
	}
	return claim
}

// allocatedProfile is the profile attribute of the device the pod's claim
// is allocated, as the node's ResourceSlices publish it.
func allocatedProfile(t *testing.T, n *draNode, pod *corev1.Pod) string {
	t.Helper()
	claim := podClaim(t, n.cl, pod)
	if claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 1 {
		t.Fatalf("claim %s allocation %+v", claim.Name, claim.Status.Allocation)
	}
	dev := claim.Status.Allocation.Devices.Results[0].Device
	for _, d := range n.devices(t) {
		if d.Name == dev {
			if a, ok := d.Attributes["profile"]; ok && a.StringValue != nil {
				return *a.StringValue
			}
		}
	}
	t.Fatalf("claim %s: device %s not published", claim.Name, dev)
	return ""
}

// draChart is what the chart renders with dra.enabled that the test needs.
type draChart struct {
	dra          []byte // templates/dra.yaml: the DeviceClasses and the agent's DRA RBAC
	claimWebhook *admregv1.MutatingWebhookConfiguration
}

// renderDRAChart renders the chart with dra.enabled through the real helm.
func renderDRAChart(t *testing.T, cl *harness.Cluster) draChart {
	t.Helper()
	h := newHelm(t, cl)
	var out draChart
	out.dra = []byte(h.run(t, "template", "migpro", "deploy/helm/migpro", "--set", "dra.enabled=true", "--show-only", "templates/dra.yaml"))
	adm := h.run(t, "template", "migpro", "deploy/helm/migpro", "--set", "dra.enabled=true", "--show-only", "templates/admission.yaml")
	for _, doc := range bytes.Split([]byte(adm), []byte("\n---\n")) {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			continue
		}
		if m, ok := obj.(*admregv1.MutatingWebhookConfiguration); ok && m.Name == "migpro-readmit-claims" {
			out.claimWebhook = m
		}
	}
	if out.claimWebhook == nil || len(out.claimWebhook.Webhooks) != 1 {
		t.Fatalf("the chart with dra.enabled renders no claim webhook:\n%s", adm)
	}
	return out
}

// registerClaimWebhook creates the chart's claim webhook pointed at the
// stack's migpro-admission and waits until the API server calls it: dry-run
// claims that look made from a pod's template, until the webhook logs one.
func registerClaimWebhook(t *testing.T, st *readmitStack, mwc *admregv1.MutatingWebhookConfiguration) {
	t.Helper()
	ctx := context.Background()
	w := &mwc.Webhooks[0]
	base := strings.TrimSuffix(*mwcBase(t, st), "/mutate")
	url := base + *w.ClientConfig.Service.Path
	caPEM, err := os.ReadFile(st.cl.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	w.ClientConfig = admregv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
	if _, err := st.cl.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("register the claim webhook: %v", err)
	}
	yes := true
	i := 0
	eventually(t, "the API server to call the claim webhook", 30*time.Second, func() bool {
		i++
		name := fmt.Sprintf("migpro-claim-probe-%d", i)
		probe := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Annotations:     map[string]string{readmit.AnnotationPodClaimName: "gpu"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "probe", UID: "probe", Controller: &yes}}},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "mig",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: readmit.DefaultDeviceClass}}}}}}
		if _, err := st.cl.Client.ResourceV1().ResourceClaims("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("dry-run probe claim: %v", err)
		}
		return strings.Contains(readFile(st.admLog), name)
	})
}

// mwcBase is the URL the stack registered the pod webhook at.
func mwcBase(t *testing.T, st *readmitStack) *string {
	t.Helper()
	m, err := st.cl.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "migpro-readmit", metav1.GetOptions{})
	if err != nil || m.Webhooks[0].ClientConfig.URL == nil {
		t.Fatalf("the pod webhook's configuration: %v", err)
	}
	return m.Webhooks[0].ClientConfig.URL
}
