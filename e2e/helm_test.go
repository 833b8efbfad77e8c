//go:build e2e

package e2e

// The Helm chart (deploy/helm/migpro) installed on the real control plane:
// the images from `make image` imported into the node's containerd, the
// agent running in a container the kubelet manages, on a simulated GPU.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/readmit"
)

// Issue 10, §5: the chart on the real control plane. The agent runs in a
// container the kubelet manages, on a simulated A100.
func TestHelmInstall(t *testing.T) {
	agentTar, admTar, _ := migproImages(t)
	n := startChartNode(t, agentTar, admTar)
	cl, k, h := n.cl, n.k, n.h
	state, run := filepath.Join(n.host, "state"), filepath.Join(n.host, "run")
	ctx := context.Background()
	metricsPort := freePort(t)
	// The agent reads pods through the webhook's node view, on the node's
	// network here (no kube-proxy for the Service).
	admPort := strconv.Itoa(freePort(t))
	values := append(n.values(t, "--set", "metrics.port="+strconv.Itoa(metricsPort)),
		"--set", "admission.replicas=1", "--set", "admission.port="+admPort,
		"--set", "admission.nodeView.url=https://127.0.0.1:"+admPort)

	// (2, 3) install; the agent's pod becomes Ready through its probes.
	start := time.Now()
	installed := h.run(t, append([]string{"install", "migpro", "deploy/helm/migpro"}, values...)...)
	for _, want := range []string{"NOTES:", "rollout status daemonset/migpro-agent", "nvidia.com/mig-", "allocatable"} {
		if !strings.Contains(installed, want) {
			t.Errorf("helm install prints no %q in its notes:\n%s", want, installed)
		}
	}
	pod := waitAgentReady(t, cl, "", 3*time.Minute)
	t.Logf("helm install -> agent Ready: %v", time.Since(start).Round(time.Millisecond))
	if !pod.Spec.HostPID || pod.Spec.PriorityClassName != "system-node-critical" {
		t.Errorf("agent pod: hostPID %v, priority class %q", pod.Spec.HostPID, pod.Spec.PriorityClassName)
	}
	metrics := fmt.Sprintf("http://127.0.0.1:%d", metricsPort)
	if code, body := httpGet(metrics + "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	// A second release installs beside this one and goes without touching it.
	helmSecondRelease(t, cl, h, values, metrics)
	// The agent labels its node with what it offers, through the real API
	// server and the node policy the chart installs.
	eventually(t, "the agent's migpro.dev/ node labels", 30*time.Second, func() bool {
		n, err := cl.Client.CoreV1().Nodes().Get(ctx, k.NodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		l := n.Labels
		return l["migpro.dev/gpu.count"] == "1" && l["migpro.dev/mig.capable"] == "true" &&
			strings.Contains(l["migpro.dev/gpu.product"], "A100") &&
			l["migpro.dev/profile.1g.5gb"] == "true" && l["migpro.dev/profile.7g.40gb"] == "true"
	})

	// (4) a pod asking for a 1g.5gb runs and sees its instance.
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Pods("default").Create(ctx, demandPod("mig-user", 1), metav1.CreateOptions{})
		return err
	})
	waitScheduledRunning(t, cl, "mig-user", k.NodeName)
	// The agent saw the pending pod through the node view: its RBAC lets it
	// read no pod from the API server.
	if alog, err := cl.Client.CoreV1().Pods(helmNS).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "agent"}).DoRaw(ctx); err != nil ||
		!strings.Contains(string(alog), "reads through https://127.0.0.1:"+admPort) || strings.Contains(string(alog), "forbidden") {
		t.Errorf("the agent's log (%v) does not say it reads through the node view, or says forbidden:\n%s", err, alog)
	}
	uuids := podMIGs(t, cl, "mig-user")
	if len(uuids) != 1 {
		t.Fatalf("mig-user sees %v, want one instance", uuids)
	}
	uuid := uuids[0]
	// The agent's resident memory inside its pod, serving one instance.
	if rss := agentRSS(t); rss == 0 || rss > 64<<20 {
		t.Errorf("agent RSS in its pod: %.1f MiB, want under 64 MiB", float64(rss)/(1<<20))
	} else {
		t.Logf("agent RSS in its pod: %.1f MiB", float64(rss)/(1<<20))
	}
	checkDeviceView(t, podLog(t, cl, "mig-user"), uuid)

	// (5) the agent's /metrics shows the instance in use.
	inUse := `migpro_instances{gpu="0",profile="1g.5gb",state="in-use"} 1`
	eventually(t, "/metrics to show the 1g.5gb in use", 30*time.Second, func() bool {
		_, body := httpGet(metrics + "/metrics")
		return strings.Contains(body, inUse)
	})
	agentAPI := client.New(filepath.Join(run, "agent.sock"))
	holder := func() (client.StatusInstance, bool) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		st, err := agentAPI.Status(cctx)
		if err != nil {
			return client.StatusInstance{}, false
		}
		return instanceByUUID(st, uuid)
	}
	eventually(t, "the agent to see mig-user holding its instance", 30*time.Second, func() bool {
		in, ok := holder()
		return ok && in.State == "in-use" && strings.Contains(in.Pod, "mig-user")
	})

	// (6) helm upgrade changing a value rolls the agent; the running pod
	// keeps its container and its instance.
	before, _ := cl.Client.CoreV1().Pods("default").Get(ctx, "mig-user", metav1.GetOptions{})
	start = time.Now()
	h.run(t, append([]string{"upgrade", "migpro", "deploy/helm/migpro"}, append(values, "--set", "log.level=debug")...)...)
	rolled := waitAgentReady(t, cl, pod.UID, 3*time.Minute)
	t.Logf("helm upgrade -> new agent Ready: %v", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(strings.Join(rolled.Spec.Containers[0].Args, " "), "--log-level=debug") {
		t.Errorf("rolled agent args %v lack the new log level", rolled.Spec.Containers[0].Args)
	}
	after, err := cl.Client.CoreV1().Pods("default").Get(ctx, "mig-user", metav1.GetOptions{})
	if err != nil || after.UID != before.UID || after.Status.Phase != corev1.PodRunning ||
		after.Status.ContainerStatuses[0].RestartCount != 0 || after.Status.ContainerStatuses[0].ContainerID != before.Status.ContainerStatuses[0].ContainerID {
		t.Fatalf("mig-user disturbed by the upgrade: %v %+v", err, after.Status)
	}
	eventually(t, "the new agent to keep mig-user's instance in use", 30*time.Second, func() bool {
		in, ok := holder()
		return ok && in.State == "in-use" && strings.Contains(in.Pod, "mig-user")
	})
	if _, body := httpGet(metrics + "/metrics"); !strings.Contains(body, inUse) {
		t.Errorf("/metrics after the upgrade lacks %s", inUse)
	}
	if m, _ := filepath.Glob("/var/run/cdi/migpro.dev-mig*" + uuid + "*"); len(m) == 0 {
		t.Errorf("no CDI spec for %s after the upgrade", uuid)
	}

	// The chart's webhook readmits a pod the Marker evicted, and the agent
	// in its pod provisions the larger profile for the replacement.
	helmReadmit(t, cl, k, rolled)

	// (7) uninstall: with the pod gone its instance is idle; the agent
	// destroys it and removes every spec on its way out.
	if err := cl.Client.CoreV1().Pods("default").Delete(ctx, "mig-user", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every instance back to idle", 60*time.Second, func() bool {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		st, err := agentAPI.Status(cctx)
		if err != nil {
			return false
		}
		for _, in := range st.Instances {
			if in.State != "idle" {
				return false
			}
		}
		return true
	})
	h.run(t, "uninstall", "migpro", "--wait", "--timeout", "2m")
	eventually(t, "the agent pod to be gone", 90*time.Second, func() bool {
		_, err := cl.Client.CoreV1().Namespaces().Get(ctx, helmNS, metav1.GetOptions{})
		p, _ := agentPod(t, cl)
		return p == nil && apierrors.IsNotFound(err)
	})
	if left := migproSpecs(); len(left) > 0 {
		t.Errorf("helm uninstall left CDI specs: %v", left)
	}
	sim, err := simgpu.ReadStateFile(filepath.Join(state, "sim", "driver-state.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range sim.GPUs {
		if len(g.GPUInstances) != 0 {
			t.Errorf("helm uninstall left instances on GPU %d: %+v", g.Index, g.GPUInstances)
		}
	}
}

// helmReadmit runs the readmission through the webhook the chart installed:
// the trainer Deployment's pod gets a 1g.5gb (provisioned by the agent for
// the pending pod), the Marker records 2g.10gb and evicts it, the API server
// calls the chart's migpro-admission for the replacement, which asks for a
// 2g.10gb and runs on one. The trainer is deleted at the end.
func helmReadmit(t *testing.T, cl *harness.Cluster, k *harness.Kubelet, agent *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "the webhook's pod to be Ready", 60*time.Second, func() bool {
		list, err := cl.Client.CoreV1().Pods(helmNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=migpro-admission"})
		if err != nil {
			return false
		}
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				if p.DeletionTimestamp == nil && c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return true
				}
			}
		}
		return false
	})
	createTrainer(t, cl, "", true)
	old := waitTrainerPod(t, cl.Client, "")
	eventually(t, "the first trainer pod to run on its 1g.5gb", 90*time.Second, func() bool {
		p, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, old.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	if q := old.Spec.Containers[0].Resources.Limits[res1g5]; q.String() != "1" || old.Annotations[readmit.AnnotationReadmitted] != "" {
		t.Fatalf("first trainer pod changed: limits %v annotations %v", old.Spec.Containers[0].Resources.Limits, old.Annotations)
	}
	markLog := logrus.New()
	markLog.SetOutput(testWriter{t})
	marker, err := readmit.NewMarker(cl.Client, readmit.WithNodeName(k.NodeName), readmit.WithMode(readmit.ModeEvict), readmit.WithLogger(markLog))
	if err != nil {
		t.Fatal(err)
	}
	mark := predictor.Mark{PodNamespace: old.Namespace, PodName: old.Name, PodUID: string(old.UID), ContainerName: "main",
		InstanceProfile: "1g.5gb", Profile: "2g.10gb", Forecast: 7 << 30, Reason: predictor.ReasonTimeToOOM, Fits: true}
	if out, err := marker.Handle(ctx, mark); err != nil {
		t.Fatalf("mark: %+v %v", out, err)
	}
	repl := waitTrainerPod(t, cl.Client, old.UID)
	if q, ok := repl.Spec.Containers[0].Resources.Limits[res2g10]; !ok || q.String() != "1" {
		t.Fatalf("replacement limits %v: the chart's webhook did not move it to %s", repl.Spec.Containers[0].Resources.Limits, res2g10)
	}
	if !strings.Contains(repl.Annotations[readmit.AnnotationReadmitted], res2g10) {
		t.Errorf("replacement annotations %v", repl.Annotations)
	}
	list, err := cl.Client.CoreV1().Pods(helmNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=migpro-admission"})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("webhook pods: %v", err)
	}
	raw, _ := cl.Client.CoreV1().Pods(helmNS).GetLogs(list.Items[0].Name, &corev1.PodLogOptions{Container: "webhook"}).DoRaw(ctx)
	if !strings.Contains(string(raw), "MIG request rewritten") {
		t.Errorf("the chart's webhook did not log the rewrite:\n%s", raw)
	}
	eventually(t, "the replacement to run on a 2g.10gb the agent made for it", 90*time.Second, func() bool {
		p, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, repl.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	t.Logf("readmitted %s -> %s through the chart's webhook (%s)", old.Name, repl.Name, repl.Annotations[readmit.AnnotationReadmitted])
	helmEvictionGuard(t, cl, agent, repl)
	bg := metav1.DeletePropagationBackground
	if err := cl.Client.AppsV1().Deployments(readmitNS).Delete(ctx, "trainer", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the trainer's pods to be gone", 60*time.Second, func() bool {
		l, err := cl.Client.CoreV1().Pods(readmitNS).List(ctx, metav1.ListOptions{LabelSelector: "app=trainer"})
		return err == nil && len(l.Items) == 0
	})
}

// helmEvictionGuard checks the chart's eviction guard with the identity of
// the chart's agent pod (a token bound to that pod, as its projected token
// is): a (dry-run) eviction of a pod on its node passes, one of a pod on
// another node is refused.
func helmEvictionGuard(t *testing.T, cl *harness.Cluster, agent, own *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	tok, err := cl.Client.CoreV1().ServiceAccounts(helmNS).CreateToken(ctx, "migpro-agent",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(600),
			BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: agent.Name, UID: agent.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token bound to the agent pod: %v", err)
	}
	as := tokenClient(t, cl, "helm-agent", tok.Status.Token)
	elsewhere := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: readmitNS},
		Spec: corev1.PodSpec{NodeName: "another-node", Containers: []corev1.Container{{Name: "c", Image: harness.BusyboxImageName}}}}
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Pods(readmitNS).Create(ctx, elsewhere, metav1.CreateOptions{})
		return err
	})
	evict := func(name string) error {
		p, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return as.CoreV1().Pods(readmitNS).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: readmitNS},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}, DryRun: []string{metav1.DryRunAll}}})
	}
	if err := evict(own.Name); err != nil {
		t.Errorf("the agent's eviction of a pod on its own node: %v", err)
	}
	err = evict("elsewhere")
	if err == nil || !strings.Contains(err.Error(), "evictions.migpro.dev") {
		t.Errorf("the agent's eviction of a pod on another node: %v, want a refusal by the chart's eviction guard", err)
	}
	t.Logf("eviction guard: %v", err)
	if err := cl.Client.CoreV1().Pods(readmitNS).Delete(ctx, "elsewhere", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
}

// agentRSS is the resident memory of the agent the chart runs: the process
// whose command is the image's /usr/local/bin/migpro-agent (containers share
// this host's kernel, so /proc shows it).
func agentRSS(t *testing.T) uint64 {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmd, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(cmd, []byte("/usr/local/bin/migpro-agent\x00")) {
			continue
		}
		status, err := os.ReadFile(filepath.Join(filepath.Dir(p), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			var kb uint64
			if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	t.Error("no /usr/local/bin/migpro-agent process found")
	return 0
}
