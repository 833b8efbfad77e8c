//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migpro/migpro/e2e/harness"
)

// Issue 31, item 6: `helm install --set dra.enabled=true` on the real
// control plane. The chart's DeviceClasses and RBAC are what the agent in
// its pod publishes ResourceSlices with, and a pod whose claim comes from a
// template of the chart's per-profile class runs on the instance the agent
// prepares for it.
func TestHelmInstallDRA(t *testing.T) {
	agentTar, _, tag := migproImages(t)
	if left := migproSpecs(); len(left) > 0 {
		t.Fatalf("migpro CDI specs already in /var/run/cdi (another install?): %v", left)
	}
	cl := harness.StartCluster(t)
	c := harness.StartContainerd(t)
	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c, Cluster: cl})
	for _, a := range []string{agentTar, harness.BusyboxImage(t)} {
		c.ImportArchive(t, "k8s.io", a)
	}
	cl.WaitNodeReady(t, k.NodeName, 60*time.Second)
	ctx := context.Background()
	patch := []byte(`{"metadata":{"labels":{"nvidia.com/gpu.present":"true"}}}`)
	if _, err := cl.Client.CoreV1().Nodes().Patch(ctx, k.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	host := t.TempDir()
	t.Cleanup(func() {
		for _, f := range migproSpecs() {
			os.Remove(f)
		}
	})
	apiPort := strings.TrimPrefix(cl.Server, "https://127.0.0.1:")
	h := newHelm(t, cl)
	start := time.Now()
	h.run(t, "install", "migpro", "deploy/helm/migpro",
		"--set", "image.tag="+tag, "--set", "image.pullPolicy=Never",
		"--set", "simulate=a100-40gb:1",
		"--set", "hostPaths.state="+filepath.Join(host, "state"), "--set", "hostPaths.run="+filepath.Join(host, "run"),
		"--set", "hostPaths.lib="+filepath.Join(host, "lib"),
		"--set", "kubeletRootDir="+k.RootDir,
		"--set", "nvidiaCDIHookPath="+harness.Bin(t, "nvidia-cdi-hook"),
		"--set", "metrics.port="+strconv.Itoa(freePort(t)),
		"--set", "hostNetwork=true",
		"--set", "extraEnv[0].name=KUBERNETES_SERVICE_HOST", "--set", "extraEnv[0].value=127.0.0.1",
		"--set", "extraEnv[1].name=KUBERNETES_SERVICE_PORT", "--set-string", "extraEnv[1].value="+apiPort,
		"--set", "admission.enabled=false",
		"--set", "dra.enabled=true")
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

	n := &draNode{cl: cl, k: k}
	n.claimTemplate(t, "one-1g", profileRequest("1g.5gb"))
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
