//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/e2e/harness"
)

// TestReadmePodmanSteps runs the README's "Running the agent" steps as a
// new user would, on a host without NVIDIA's container toolkit: `make
// build`, the agent on the simulated driver with the README's flags, migctl
// alloc, podman run --device with the printed name, migctl top and free. The
// container must start (a spec naming a missing nvidia-cdi-hook would fail
// it with exit 127), and the agent says once what is missing.
func TestReadmePodmanSteps(t *testing.T) {
	harness.RequireRoot(t)
	for _, p := range []string{"/usr/bin/nvidia-cdi-hook", "/usr/local/bin/nvidia-cdi-hook"} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists: this test needs a host without NVIDIA's container toolkit", p)
		}
	}
	for _, p := range append(defaultAgentPaths, harness.KubeletSocket, defaults.PodResourcesSocket) {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists: this test needs a host with no kubelet and no migpro install", p)
		}
	}
	root := repoRoot()
	// The README's PATH has no e2e cache: nvidia-cdi-hook is nowhere.
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") {
			kv = "PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		}
		if !strings.HasPrefix(kv, "MIGPRO_") {
			env = append(env, kv)
		}
	}
	mk := exec.Command("make", "build")
	mk.Dir, mk.Env = root, append(env, "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	bin := filepath.Join(root, "bin")
	dir := t.TempDir()
	a := &agentProc{Dir: dir, Socket: defaults.AgentSocket, log: filepath.Join(dir, "agent.log"),
		args: []string{"--simulate", "a100-40gb:2,h100-80gb", "--hook", bin + "/migpro-hook", "--shim", bin + "/libmigpro-shim.so"}}
	a.bin = filepath.Join(bin, "migpro-agent")
	t.Cleanup(func() {
		a.stop(t, syscall.SIGTERM)
		harness.KeepLog(t, "agent", a.log)
		for _, p := range defaultAgentPaths {
			os.RemoveAll(p)
		}
		m, _ := filepath.Glob("/var/run/cdi/" + strings.ReplaceAll(defaults.CDIKind, "/", "-") + "*")
		for _, f := range m {
			os.Remove(f)
		}
	})
	a.start(t)
	migctl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "migctl"), args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("migctl %v: %v: %s\nagent log:\n%s", args, err, out, a.logTail())
		}
		return strings.TrimSpace(string(out))
	}
	migctl("status")
	name := migctl("alloc", "2g.10gb")
	if !strings.HasPrefix(name, defaults.CDIKind+"=MIG-") {
		t.Fatalf("migctl alloc printed %q", name)
	}
	uuid := strings.TrimPrefix(name, defaults.CDIKind+"=")
	specs, _ := filepath.Glob("/var/run/cdi/*" + uuid + "*.json")
	if len(specs) != 1 {
		m, _ := filepath.Glob("/var/run/cdi/*")
		t.Fatalf("the instance's spec: %v (in /var/run/cdi: %v)", specs, m)
	}
	spec, err := os.ReadFile(specs[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(spec), "nvidia-cdi-hook") {
		t.Errorf("the spec names nvidia-cdi-hook, which this host does not have:\n%s", spec)
	}
	if !strings.Contains(string(spec), "libcuda.so") {
		t.Errorf("the spec does not carry the simulated driver:\n%s", spec)
	}
	p := harness.Podman(t)
	r := p.RunRootfs(t, harness.BusyboxRootfs(t), harness.DeviceFlags(name), "sh", "-c", "ls /dev/nvidia*; echo NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES")
	if r.ExitCode != 0 || r.Err != nil {
		t.Fatalf("podman run --device %s: exit %d (%v)\n%s%s", name, r.ExitCode, r.Err, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "/dev/nvidiactl") {
		t.Errorf("the container sees no /dev/nvidiactl:\n%s", r.Stdout)
	}
	migctl("top")
	migctl("free", name)
	log := a.logTail()
	if n := strings.Count(log, "nvidia-cdi-hook not found"); n != 1 {
		t.Errorf("the agent said %d times that nvidia-cdi-hook is missing, want once:\n%s", n, log)
	}
}

// TestAgentReadyFollowsAPIServer: the agent, linked to a real API server,
// is Ready while the server answers, not Ready while the network to it is
// gone, and Ready again once it is back; its log blames the network, not
// RBAC. The way to the server is a TCP relay the test cuts.
func TestAgentReadyFollowsAPIServer(t *testing.T) {
	cl := harness.StartCluster(t)
	ctx := context.Background()
	const node = "migpro-readyz"
	if _, err := cl.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	relay := startRelay(t, strings.TrimPrefix(cl.Server, "https://"))
	b, err := os.ReadFile(cl.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(strings.ReplaceAll(string(b), cl.Server, "https://"+relay.addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	a := startAgent(t, "a100-40gb:1", "--kubeconfig", kc, "--node-name", node, "--plugin-dir", t.TempDir(),
		"--metrics-addr", "127.0.0.1:"+strconv.Itoa(port))
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	wait := func(what string, want int, body string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, got := httpGet(readyz)
			if code == want && strings.Contains(got, body) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: /readyz %d %q, want %d with %q\nagent log:\n%s", what, code, got, want, body, a.logTail())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	wait("API server reachable", 200, "ok")
	cut := time.Now()
	relay.stop()
	wait("API server cut off", 503, "API server")
	t.Logf("not Ready %v after the API server became unreachable", time.Since(cut).Round(100*time.Millisecond))
	relay.restart(t)
	wait("API server back", 200, "ok")
	// The whole log: the kubelet-registration retries of this node without
	// a kubelet can push the line out of the tail (seen in CI).
	whole, err := os.ReadFile(a.log)
	if err != nil {
		t.Fatal(err)
	}
	if log := string(whole); strings.Contains(log, "get and patch") || !strings.Contains(log, "API server unreachable") {
		t.Errorf("the log should say the API server is unreachable, without blaming RBAC:\n%s", log)
	}
}

// relay forwards TCP connections from addr to target until stopped.
type relay struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	r := &relay{addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), target: target}
	r.restart(t)
	t.Cleanup(r.stop)
	return r
}

func (r *relay) restart(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", r.target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, up)
			r.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

// stop closes the listener and every relayed connection: the agent's
// requests then fail to connect, as when the network is gone.
func (r *relay) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

// helmSecondRelease installs a second release of the chart beside the
// running one (its own fullname and namespace; its agent on no node, since
// one node takes one agent, and its own webhook), waits for that webhook to
// be available, checks both releases' cluster-scoped objects stand side by
// side, uninstalls it, and checks the first release is untouched and its
// agent still Ready.
func helmSecondRelease(t *testing.T, cl *harness.Cluster, h *helm, values []string, metrics string) {
	t.Helper()
	ctx := context.Background()
	const ns = "migpro-b-system"
	second := append(append([]string{}, values...),
		"--set", "fullnameOverride=migpro-b", "--set", "namespace="+ns,
		"--set", "nodeSelector.migpro\\.dev/second-release=none",
		"--set", "admission.port="+strconv.Itoa(freePort(t)))
	h.run(t, append([]string{"install", "migpro-b", "deploy/helm/migpro"}, second...)...)
	eventually(t, "the second release's webhook to be available", 2*time.Minute, func() bool {
		d, err := cl.Client.AppsV1().Deployments(ns).Get(ctx, "migpro-b-admission", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas >= 1
	})
	for _, name := range []string{"migpro-agent", "migpro-b-agent", "migpro-admission", "migpro-b-admission"} {
		if _, err := cl.Client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ClusterRole %s: %v", name, err)
		}
	}
	for _, name := range []string{"migpro-readmit", "migpro-b-readmit"} {
		if _, err := cl.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("MutatingWebhookConfiguration %s: %v", name, err)
		}
	}
	if ns, err := cl.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil || ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("the second release's namespace: %v, labels %v", err, ns.Labels)
	}
	h.run(t, "uninstall", "migpro-b", "--wait", "--timeout", "2m")
	for _, name := range []string{"migpro-agent", "migpro-admission"} {
		if _, err := cl.Client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("uninstalling the second release removed the first's ClusterRole %s: %v", name, err)
		}
	}
	if _, err := cl.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "migpro-readmit", metav1.GetOptions{}); err != nil {
		t.Errorf("uninstalling the second release removed the first's webhook configuration: %v", err)
	}
	if code, body := httpGet(metrics + "/readyz"); code != 200 {
		t.Errorf("the first release's agent after the second's uninstall: /readyz %d %s", code, body)
	}
}

// TestClusterUpDown: `make cluster-up` starts the suite's cluster for a
// person and prints where its kubeconfig is; the node is Ready through it;
// `make cluster-down` stops every process it started.
func TestClusterUpDown(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	mk := func(target string) string {
		t.Helper()
		cmd := exec.Command("make", "-s", target, "CLUSTER_DIR="+dir)
		cmd.Dir = repoRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("make %s: %v\n%s\nlog:\n%s", target, err, out, log)
		}
		return string(out)
	}
	t.Cleanup(func() { exec.Command("make", "-s", "cluster-down", "CLUSTER_DIR="+dir).Run() })
	out := mk("cluster-up")
	kc := filepath.Join(dir, "kubeconfig")
	if !strings.Contains(out, "kubeconfig: "+kc) {
		t.Fatalf("make cluster-up does not print the kubeconfig's path:\n%s", out)
	}
	pid, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	kubectl := exec.Command(harness.Bin(t, "kubectl"), "--kubeconfig", kc, "get", "nodes",
		"-o", `jsonpath={.items[0].status.conditions[?(@.type=="Ready")].status}`)
	if got, err := kubectl.CombinedOutput(); err != nil || strings.TrimSpace(string(got)) != "True" {
		t.Fatalf("kubectl get nodes through %s: %v %q, want a Ready node", kc, err, got)
	}
	mk("cluster-down")
	p, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if p > 0 && syscall.Kill(p, 0) == nil {
		t.Errorf("clusterup (pid %d) still runs after make cluster-down", p)
	}
	if _, err := os.Stat(kc); err == nil {
		t.Error("make cluster-down left the kubeconfig of a cluster that is gone")
	}
}
