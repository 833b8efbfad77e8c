//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/hook/shimtest"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// TestDRATelemetry: a container given its instance through a DRA claim
// gets the hook and the shim from the CDI spec Prepare returned, exactly as
// a device-plugin container does. Through the real scheduler, kubelet,
// containerd and runc, the pattern program runs in a pod whose claim asks
// for a 1g.5gb; the agent's telemetry registers the container with its pod
// and its instance, and migctl top shows the pattern's memory.
func TestDRATelemetry(t *testing.T) {
	e := newHookEnv(t) // the hook, the shim and the pattern program
	n := startDRANode(t, "a100-40gb", true, "--hook", e.hookBin, "--shim", e.art.Shim, "--poll-every", "100ms")
	const image = "migpro-e2e.test/drapattern:1"
	archive := filepath.Join(t.TempDir(), "pattern.tar")
	if err := harness.WriteOCIArchive(archive, harness.ImageSpec{Name: image, Rootfs: e.rootfs(t), Entrypoint: []string{"/app/pattern"}}); err != nil {
		t.Fatal(err)
	}
	n.k.Containerd.ImportArchive(t, "k8s.io", archive)
	// The pattern, then 3 MiB held while the container sleeps (the shim
	// reports at most every 100 ms: the call after a pause sends it).
	steps := append(append([]string{}, patternSteps...), "alloc:3145728", "sleep:200", "info", "sleep:600000")
	want, err := shimtest.Expect(steps)
	if err != nil {
		t.Fatal(err)
	}

	n.claimTemplate(t, "mig-1g", profileRequest("1g.5gb"))
	p := claimPod("dra-pattern", "mig-1g")
	p.Spec.Containers[0].Image = image
	p.Spec.Containers[0].Command = append([]string{"/app/pattern"}, steps...)
	took := n.runPods(t, p)
	t.Logf("DRA pattern pod ran in %v", took.Round(time.Millisecond))

	var held string
	for _, in := range n.a.status(t).Instances {
		if in.Profile == "1g.5gb" && in.State == "in-use" {
			held = in.UUID
		}
	}
	if held == "" {
		t.Fatalf("no 1g.5gb in use by the claim: %+v", n.a.status(t).Instances)
	}
	var got telemetryapi.TopEntry
	eventually(t, "migctl top to show the DRA pod's pattern", 90*time.Second, func() bool {
		for _, c := range n.a.top(t).Containers {
			if c.PodName == "dra-pattern" && c.Allocs == want.Allocs && c.ShimBytes == want.Current {
				got = c
				return true
			}
		}
		return false
	})
	pod, err := n.cl.Client.CoreV1().Pods("default").Get(context.Background(), "dra-pattern", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.PodNamespace != "default" || got.PodUID != string(pod.UID) || got.ContainerName != "main" {
		t.Errorf("registered as %s/%s (uid %s) container %s, want default/dra-pattern (uid %s) container main", got.PodNamespace, got.PodName, got.PodUID, got.ContainerName, pod.UID)
	}
	if len(got.MIGUUIDs) != 1 || got.MIGUUIDs[0] != held {
		t.Errorf("registered on %v, want the claim's instance %s", got.MIGUUIDs, held)
	}
	// The shim's figure: currentBytes is the newest sample of either
	// source, and the simulated NVML sees none of the stub's memory.
	if want.Current == 0 || got.ShimBytes != want.Current {
		t.Errorf("top shows %d B from the shim, the container holds %d B", got.ShimBytes, want.Current)
	}
	checkTopEntry(t, n.a, got, want)
	t.Logf("DRA container in top: %s/%s on %s, shim %d B, peak %d B of %d B, %d allocs", got.PodNamespace, got.PodName, held, got.ShimBytes, got.PeakBytes, got.CapacityBytes, got.Allocs)

	// Deleting the pod unregisters the container (poststop) and the
	// kubelet unprepares the claim.
	n.deletePods(t, "dra-pattern")
	waitDeregistered(t, n.a, got.ID)
	eventually(t, "the claim's instance back to idle", 60*time.Second, func() bool { return instanceOf(t, n.a, held).State == "idle" })
}
