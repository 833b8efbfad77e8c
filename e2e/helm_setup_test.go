//go:build e2e

package e2e

// The Helm chart's set-up, shared by the chart's tests (helm_test.go,
// helm_dra_test.go, install_test.go): the images, a helm client, the node
// the chart installs on, and small waits and probes.

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migpro/migpro/e2e/harness"
)

const helmNS = "migpro-system"

// migproImages runs `make image` (a no-op when the archives are current)
// and returns the agent and admission archives and their tag.
func migproImages(t *testing.T) (agentTar, admissionTar, tag string) {
	t.Helper()
	runMake := func(args ...string) string {
		cmd := exec.Command("make", append([]string{"-s"}, args...)...)
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	start := time.Now()
	runMake("image")
	tag = runMake("image-tag")
	agentTar = filepath.Join(repoRoot(), "bin", "images", "migpro-agent-"+tag+".tar")
	admissionTar = filepath.Join(repoRoot(), "bin", "images", "migpro-admission-"+tag+".tar")
	for _, f := range []string{agentTar, admissionTar} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatalf("make image did not write %s: %v", f, err)
		}
		t.Logf("image %s: %.1f MiB", filepath.Base(f), float64(fi.Size())/(1<<20))
	}
	t.Logf("make image: %v", time.Since(start).Round(time.Millisecond))
	return agentTar, admissionTar, tag
}

// helm runs the helm from `make e2e-deps-helm` against the cluster, with
// its own cache and config directories.
type helm struct {
	bin, kubeconfig, home string
}

func newHelm(t *testing.T, cl *harness.Cluster) *helm {
	return &helm{bin: harness.Bin(t, "helm"), kubeconfig: cl.Kubeconfig, home: t.TempDir()}
}

func (h *helm) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(h.bin, append(args, "--kubeconfig", h.kubeconfig)...)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+h.home+"/cache", "HELM_CONFIG_HOME="+h.home+"/config", "HELM_DATA_HOME="+h.home+"/data")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// freePort is the port of freeAddr.
func freePort(t *testing.T) int {
	t.Helper()
	addr, err := net.ResolveTCPAddr("tcp", freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	return addr.Port
}

// agentPod returns the DaemonSet's live pod on node and whether it is Ready.
func agentPod(t *testing.T, cl *harness.Cluster) (*corev1.Pod, bool) {
	list, err := cl.Client.CoreV1().Pods(helmNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=migpro-agent"})
	if err != nil {
		return nil, false
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return p, c.Status == corev1.ConditionTrue
			}
		}
		return p, false
	}
	return nil, false
}

// waitAgentReady waits for a Ready agent pod other than not, and fails with
// its state and log when none comes.
func waitAgentReady(t *testing.T, cl *harness.Cluster, not types.UID, timeout time.Duration) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p, ready := agentPod(t, cl)
		if p != nil && ready && p.UID != not {
			return p
		}
		if time.Now().After(deadline) {
			var state, log string
			if p != nil {
				b, _ := json.MarshalIndent(p.Status, "", "  ")
				state = string(b)
				raw, _ := cl.Client.CoreV1().Pods(helmNS).GetLogs(p.Name, &corev1.PodLogOptions{Container: "agent"}).DoRaw(context.Background())
				log = string(raw)
			}
			t.Fatalf("no Ready agent pod after %v\nstatus: %s\nlog:\n%s", timeout, state, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func httpGet(url string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func migproSpecs() []string {
	m, _ := filepath.Glob("/var/run/cdi/migpro.dev-mig*")
	return m
}

// chartNode is a cluster of one kubelet node, ready for the chart: the
// images imported into its containerd, the node labelled as a GPU node,
// and host directories for the agent's state, socket and libraries.
type chartNode struct {
	cl   *harness.Cluster
	k    *harness.Kubelet
	h    *helm
	tag  string
	host string
}

// startChartNode starts the node with the image archives (and busybox)
// imported, and removes the migpro CDI specs the install leaves when the
// test ends.
func startChartNode(t *testing.T, archives ...string) *chartNode {
	t.Helper()
	_, _, tag := migproImages(t)
	if left := migproSpecs(); len(left) > 0 {
		t.Fatalf("migpro CDI specs already in /var/run/cdi (another install?): %v", left)
	}
	cl := harness.StartCluster(t)
	c := harness.StartContainerd(t)
	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c, Cluster: cl})
	for _, a := range append(archives, harness.BusyboxImage(t)) {
		c.ImportArchive(t, "k8s.io", a)
	}
	cl.WaitNodeReady(t, k.NodeName, 60*time.Second)
	// The default node affinity: NFD's vendor label or nvidia.com/gpu.present.
	patch := []byte(`{"metadata":{"labels":{"nvidia.com/gpu.present":"true"}}}`)
	if _, err := cl.Client.CoreV1().Nodes().Patch(context.Background(), k.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range migproSpecs() {
			os.Remove(f)
		}
	})
	return &chartNode{cl: cl, k: k, h: newHelm(t, cl), tag: tag, host: t.TempDir()}
}

// values are the chart values every install on this node needs, then
// extra: the images as imported, one simulated A100, the host directories
// and the kubelet's, and (no pod network and no kube-proxy here) host
// network with the API server's own address.
func (n *chartNode) values(t *testing.T, extra ...string) []string {
	t.Helper()
	apiPort := strings.TrimPrefix(n.cl.Server, "https://127.0.0.1:")
	return append([]string{
		"--set", "image.tag=" + n.tag, "--set", "image.pullPolicy=Never",
		"--set", "simulate=a100-40gb:1",
		"--set", "hostPaths.state=" + filepath.Join(n.host, "state"), "--set", "hostPaths.run=" + filepath.Join(n.host, "run"),
		"--set", "hostPaths.lib=" + filepath.Join(n.host, "lib"),
		"--set", "kubeletRootDir=" + n.k.RootDir,
		"--set", "nvidiaCDIHookPath=" + harness.Bin(t, "nvidia-cdi-hook"),
		"--set", "hostNetwork=true",
		"--set", "extraEnv[0].name=KUBERNETES_SERVICE_HOST", "--set", "extraEnv[0].value=127.0.0.1",
		"--set", "extraEnv[1].name=KUBERNETES_SERVICE_PORT", "--set-string", "extraEnv[1].value=" + apiPort,
	}, extra...)
}
