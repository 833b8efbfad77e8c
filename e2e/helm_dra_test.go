//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Issue 31, item 6: `helm install --set dra.enabled=true` on the real
// control plane. The chart's DeviceClasses and RBAC are what the agent in
// its pod publishes ResourceSlices with, and a pod whose claim comes from a
// template of the chart's per-profile class runs on the instance the agent
// prepares for it.
func TestHelmInstallDRA(t *testing.T) {
	agentTar, _, _ := migproImages(t)
	n := startChartNode(t, agentTar)
	cl, k := n.cl, n.k
	ctx := context.Background()
	start := time.Now()
	n.h.run(t, append([]string{"install", "migpro", "deploy/helm/migpro"},
		n.values(t, "--set", "metrics.port="+strconv.Itoa(freePort(t)), "--set", "admission.enabled=false", "--set", "dra.enabled=true")...)...)
	pod := waitAgentReady(t, cl, "", 3*time.Minute)
	t.Logf("helm install --set dra.enabled=true -> agent Ready: %v", time.Since(start).Round(time.Millisecond))
	if args := pod.Spec.Containers[0].Args; !slices.Contains(args, "--dra") {
		t.Errorf("agent args %q lack --dra", args)
	}
	for _, name := range []string{"mig.migpro.dev", "1g.5gb.mig.migpro.dev"} {
		if _, err := cl.Client.ResourceV1().DeviceClasses().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("DeviceClass %s: %v", name, err)
		}
	}
	eventually(t, "the agent's ResourceSlices for its node", 60*time.Second, func() bool {
		l, err := cl.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, s := range l.Items {
			if s.Spec.Driver == "migpro.dev" && s.Spec.NodeName != nil && *s.Spec.NodeName == k.NodeName && len(s.Spec.Devices) > 0 {
				return true
			}
		}
		return false
	})

	(&draNode{cl: cl, k: k}).claimTemplate(t, "one-1g", profileRequest("1g.5gb"))
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Pods("default").Create(ctx, claimPod("claim-user", "one-1g"), metav1.CreateOptions{})
		return err
	})
	waitScheduledRunning(t, cl, "claim-user", k.NodeName)
	uuids := podMIGs(t, cl, "claim-user")
	if len(uuids) != 1 {
		t.Fatalf("claim-user sees %v, want one instance", uuids)
	}
	checkDeviceView(t, podLog(t, cl, "claim-user"), uuids[0])
}
