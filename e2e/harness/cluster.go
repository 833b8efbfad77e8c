package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a real single-node control plane: etcd v3.5, kube-apiserver,
// kube-controller-manager and kube-scheduler v1.32, with a throw-away CA.
// Start a kubelet into it with StartKubelet(t, KubeletOptions{Cluster: cl}).
type Cluster struct {
	Dir        string // certs, kubeconfigs, etcd data, logs
	Server     string // https://127.0.0.1:<port>
	CAFile     string
	Kubeconfig string // admin (system:masters)
	// Client is an admin clientset.
	Client kubernetes.Interface
	// NodeIP is this machine's first non-loopback IPv4 address: the kubelet
	// refuses a loopback node IP.
	NodeIP string

	pki     *pki
	daemons []*daemon
}

// StartCluster starts the control plane on free loopback ports and waits
// until the API server is ready and the controller-manager has made the
// default service account (pods are refused before). Cleanup stops it and
// removes Dir. About 10 s.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return StartClusterWith(t)
}

// StartClusterWith is StartCluster with more kube-apiserver flags (after
// the harness's own), such as an --admission-control-config-file.
func StartClusterWith(t testing.TB, apiserverArgs ...string) *Cluster {
	t.Helper()
	RequireRoot(t)
	start := time.Now()
	etcd, apiserver := Bin(t, "etcd"), Bin(t, "kube-apiserver")
	cm, sched := Bin(t, "kube-controller-manager"), Bin(t, "kube-scheduler")
	nodeIP, err := hostIPv4()
	if err != nil {
		t.Fatal(err)
	}
	dir := tempDir(t, "cluster")
	cl := &Cluster{Dir: dir, NodeIP: nodeIP}
	t.Cleanup(func() { cl.stop(t) })
	if cl.pki, err = newPKI(filepath.Join(dir, "pki")); err != nil {
		t.Fatalf("cluster CA: %v", err)
	}
	cl.CAFile = cl.pki.CAFile
	ports := freePorts(t, 5)
	etcdURL := "http://127.0.0.1:" + ports[0]
	peerURL := "http://127.0.0.1:" + ports[1]
	cl.Server = "https://127.0.0.1:" + ports[2]

	must := func(a, b string, err error) (string, string) {
		t.Helper()
		if err != nil {
			t.Fatalf("cluster certificates: %v", err)
		}
		return a, b
	}
	srvCert, srvKey := must(cl.pki.issue("apiserver", "kube-apiserver", nil,
		"127.0.0.1", "10.0.0.1", nodeIP, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"))
	kcCert, kcKey := must(cl.pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}))
	saKey, saPub := must(cl.pki.serviceAccountKeys())
	cl.Kubeconfig = cl.UserKubeconfig(t, "admin", "migpro-e2e-admin", "system:masters")
	cmKubeconfig := cl.UserKubeconfig(t, "controller-manager", "system:kube-controller-manager")
	schedKubeconfig := cl.UserKubeconfig(t, "scheduler", "system:kube-scheduler")

	cl.run(t, "etcd", etcd, "--name", "e2e", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "e2e="+peerURL, "--unsafe-no-fsync", "--log-level", "warn")
	cl.run(t, "kube-apiserver", apiserver, append([]string{"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", ports[2],
		"--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
		"--allow-privileged=true", "--service-cluster-ip-range", "10.0.0.0/24",
		"--endpoint-reconciler-type", "none", "--cert-dir", filepath.Join(dir, "apiserver"),
		// Webhooks named by a Service are called at its endpoints, not its
		// cluster IP: there is no kube-proxy.
		"--enable-aggregator-routing=true",
		"--client-ca-file", cl.CAFile, "--tls-cert-file", srvCert, "--tls-private-key-file", srvKey,
		"--kubelet-client-certificate", kcCert, "--kubelet-client-key", kcKey,
		"--kubelet-preferred-address-types", "InternalIP",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-account-issuer", "https://kubernetes.default.svc"}, apiserverArgs...)...)
	cl.Client = cl.Clientset(t, cl.Kubeconfig)
	cl.waitReady(t)
	cl.run(t, "kube-controller-manager", cm, "--kubeconfig", cmKubeconfig,
		"--authentication-kubeconfig", cmKubeconfig, "--authorization-kubeconfig", cmKubeconfig,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", ports[3],
		"--service-account-private-key-file", saKey, "--root-ca-file", cl.CAFile,
		"--use-service-account-credentials=true",
		"--cluster-signing-cert-file", cl.CAFile, "--cluster-signing-key-file", filepath.Join(cl.pki.dir, "ca.key"))
	cl.run(t, "kube-scheduler", sched, "--kubeconfig", schedKubeconfig,
		"--authentication-kubeconfig", schedKubeconfig, "--authorization-kubeconfig", schedKubeconfig,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", ports[4])
	cl.waitDefaultServiceAccount(t)
	t.Logf("cluster ready in %v: %s, kubeconfig %s", time.Since(start).Round(time.Millisecond), cl.Server, cl.Kubeconfig)
	return cl
}

// UserKubeconfig issues a client certificate for user in groups and returns
// the path of a kubeconfig using it (for example a node agent's identity,
// to which a test binds its own RBAC).
func (cl *Cluster) UserKubeconfig(t testing.TB, name, user string, groups ...string) string {
	t.Helper()
	cert, key, err := cl.pki.issue("user-"+name, user, groups)
	if err != nil {
		t.Fatalf("issue cert for %s: %v", user, err)
	}
	path := filepath.Join(cl.Dir, name+".kubeconfig")
	if err := writeKubeconfig(path, cl.Server, cl.CAFile, cert, key); err != nil {
		t.Fatal(err)
	}
	return path
}

// ServingCert issues a serving certificate for hosts (IPs or DNS names),
// signed by the cluster's CA (cl.CAFile), for a server the API server calls,
// such as a webhook. It returns the cert and key paths.
func (cl *Cluster) ServingCert(t testing.TB, name string, hosts ...string) (certFile, keyFile string) {
	t.Helper()
	cert, key, err := cl.pki.issue("serving-"+name, name, nil, hosts...)
	if err != nil {
		t.Fatalf("issue serving cert for %s: %v", name, err)
	}
	return cert, key
}

// RESTConfig loads a kubeconfig (from UserKubeconfig, or cl.Kubeconfig).
func (cl *Cluster) RESTConfig(t testing.TB, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", kubeconfig, err)
	}
	return cfg
}

// Kubectl runs kubectl with the admin kubeconfig.
func (cl *Cluster) Kubectl(t testing.TB, args ...string) Result {
	t.Helper()
	return runCmd(time.Minute, nil, Bin(t, "kubectl"), append([]string{"--kubeconfig", cl.Kubeconfig}, args...)...)
}

// WaitNodeReady waits until node name reports Ready.
func (cl *Cluster) WaitNodeReady(t testing.TB, name string, timeout time.Duration) *corev1.Node {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		n, err := cl.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		lastErr = err
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return n
				}
				if c.Type == corev1.NodeReady {
					lastErr = fmt.Errorf("node condition Ready=%s: %s", c.Status, c.Message)
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("node %s not Ready within %v: %v", name, timeout, lastErr)
	return nil
}

// Clientset is a client with the identity in kubeconfig (from
// UserKubeconfig, a ServiceAccount token, or cl.Kubeconfig).
func (cl *Cluster) Clientset(t testing.TB, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cl.RESTConfig(t, kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (cl *Cluster) run(t testing.TB, name, bin string, args ...string) {
	t.Helper()
	d, err := startDaemon(name, filepath.Join(cl.Dir, name+".log"), nil, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	cl.daemons = append(cl.daemons, d)
}

func (cl *Cluster) waitReady(t testing.TB) {
	t.Helper()
	cl.waitFor(t, "kube-apiserver /readyz", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := cl.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
}

func (cl *Cluster) waitDefaultServiceAccount(t testing.TB) {
	t.Helper()
	cl.waitFor(t, "default service account", func() error {
		_, err := cl.Client.CoreV1().ServiceAccounts("default").Get(context.Background(), "default", metav1.GetOptions{})
		return err
	})
}

// waitFor polls check for up to 60 s, failing t early if a daemon exits.
func (cl *Cluster) waitFor(t testing.TB, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, d := range cl.daemons {
			if d.exited() {
				t.Fatalf("%s exited while waiting for %s: %v\n%s", d.name, what, d.err, tail(d.log, 30))
			}
		}
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not there within 60s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (cl *Cluster) stop(t testing.TB) {
	start := time.Now()
	defer func() { t.Logf("cluster stopped in %v", time.Since(start).Round(time.Millisecond)) }()
	for i := len(cl.daemons) - 1; i >= 0; i-- {
		d := cl.daemons[i]
		dstart := time.Now()
		err := d.stop(15 * time.Second)
		if dur := time.Since(dstart); dur > 2*time.Second {
			t.Logf("%s took %v to stop", d.name, dur.Round(time.Millisecond))
		}
		if err != nil {
			t.Errorf("stop %s: %v", d.name, err)
		}
		KeepLog(t, d.name, d.log)
	}
	if err := os.RemoveAll(cl.Dir); err != nil {
		t.Errorf("remove %s: %v", cl.Dir, err)
	}
}

// hostIPv4 returns the first non-loopback IPv4 address of an interface that
// is up.
func hostIPv4() (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address for the kubelet's node IP")
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	var ls []net.Listener
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
