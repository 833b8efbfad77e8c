//go:build e2e

package e2e

// Issue 11, item 5 on a real node: a pod whose container the hook cannot
// give telemetry starts anyway (fail-open), and the agent records an Event
// on it in the real API server.

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/agent/kube"
	"github.com/migpro/migpro/e2e/harness"
)

const failOpenNS = "failopen-e2e"

// TestFailOpenEventOnKubeletPod runs two pods on a kubelet over containerd
// and runc, with the agent's hook in the CDI specs:
//   - readOnlyRootFilesystem: true alone does not stop the hook: runc makes
//     the rootfs read-only after the createRuntime hooks ran, so the
//     container gets its telemetry;
//   - a read-only volume at /run (where the hook must make /run/migpro)
//     does: the container starts without telemetry, and the agent records
//     a TelemetryFailOpen Event on the pod.
func TestFailOpenEventOnKubeletPod(t *testing.T) {
	e := newHookEnv(t) // the hook and the shim
	cl, k := startClusterNode(t)
	ctx := context.Background()
	// The agent reads the pod from the API server here (no node view):
	// the chart's RBAC for that.
	kubeconfig := serviceAccountKubeconfig(t, cl, "migpro-agent", chartAgentRBACWithoutView(t))
	// The default --assign-grace (30 s): the registration needs the
	// instance still in use when the hook runs, and under CI load the
	// kubelet's PodResources may list the allocation later than a short
	// grace allows (the agent then releases it, and the hook's registration
	// is refused).
	a := startAgent(t, "a100-40gb", "--plugin-dir", harness.DevicePluginDir, "--pod-resources", k.PodResourcesSocket(),
		"--kubeconfig", kubeconfig, "--node-name", k.NodeName,
		"--hook", e.hookBin, "--shim", e.art.Shim, "--poll-every", "100ms")
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: failOpenNS}}, metav1.CreateOptions{})
		return err
	})

	roRoot := runReadOnlyPod(t, cl, k, "ro-root", false)
	eventually(t, "ro-root's container registered with the agent", 30*time.Second, func() bool {
		for _, c := range a.top(t).Containers {
			if c.PodName == "ro-root" {
				return true
			}
		}
		return false
	})

	roRun := runReadOnlyPod(t, cl, k, "ro-run", true)
	var ev corev1.Event
	eventually(t, "a "+kube.ReasonTelemetryFailOpen+" Event on ro-run", 30*time.Second, func() bool {
		evs := failOpenEvents(t, cl)
		if len(evs) > 0 {
			ev = evs[0]
		}
		return len(evs) > 0
	})
	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.Name != "ro-run" || ev.InvolvedObject.UID != roRun.UID ||
		ev.InvolvedObject.FieldPath != "spec.containers{main}" || !strings.Contains(ev.Message, "read-only file system") {
		t.Errorf("event %+v, want a Warning on ro-run's container main naming the read-only file system", ev)
	}
	t.Logf("event on %s: %s %s: %s", ev.InvolvedObject.Name, ev.Type, ev.Reason, ev.Message)
	if evs := failOpenEvents(t, cl); len(evs) != 1 {
		t.Errorf("fail-open Events %+v, want only ro-run's (ro-root %s has telemetry)", evs, roRoot.UID)
	}
	if log := a.logTail(); !strings.Contains(log, "container started without telemetry (fail-open)") || !strings.Contains(log, "pod="+failOpenNS+"/ro-run") {
		t.Errorf("the agent logged no fail-open line for ro-run:\n%s", log)
	}
	for _, c := range a.top(t).Containers {
		if c.PodName == "ro-run" {
			t.Errorf("ro-run's registration left behind: %+v", c)
		}
	}
}

// runReadOnlyPod runs a pod whose container main (readOnlyRootFilesystem,
// one 1g.5gb) sleeps, with a read-only emptyDir at /run when roRun is set,
// and waits until it runs on k's node.
func runReadOnlyPod(t *testing.T, cl *harness.Cluster, k *harness.Kubelet, name string, roRun bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	grace, no, yes := int64(1), false, true
	c := corev1.Container{Name: "main", Image: harness.BusyboxImageName, ImagePullPolicy: corev1.PullNever,
		Command:         []string{"sleep", "3600"},
		SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes},
		Resources:       corev1.ResourceRequirements{Limits: corev1.ResourceList{res1g5: resource.MustParse("1")}}}
	spec := corev1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: &grace, AutomountServiceAccountToken: &no}
	if roRun {
		c.VolumeMounts = []corev1.VolumeMount{{Name: "run", MountPath: "/run", ReadOnly: true}}
		spec.Volumes = []corev1.Volume{{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
	spec.Containers = []corev1.Container{c}
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Pods(failOpenNS).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: failOpenNS}, Spec: spec}, metav1.CreateOptions{})
		return err
	})
	var p *corev1.Pod
	eventually(t, name+" running on "+k.NodeName, 120*time.Second, func() bool {
		var err error
		p, err = cl.Client.CoreV1().Pods(failOpenNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == k.NodeName && p.Status.Phase == corev1.PodRunning
	})
	return p
}

// failOpenEvents lists the TelemetryFailOpen Events of the test namespace.
func failOpenEvents(t *testing.T, cl *harness.Cluster) []corev1.Event {
	t.Helper()
	list, err := cl.Client.CoreV1().Events(failOpenNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.Reason == kube.ReasonTelemetryFailOpen {
			out = append(out, ev)
		}
	}
	return out
}
