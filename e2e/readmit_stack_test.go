//go:build e2e

package e2e

// The readmission stack of the e2e tests: the agent's and the webhook's
// identities with the manifests' RBAC, migpro-admission built from this tree
// and served with a certificate of the cluster's CA, and the manifest's
// MutatingWebhookConfiguration and the eviction guard's
// ValidatingWebhookConfiguration pointed at it. The Marker evicts with a
// token bound to its node, as the agent's DaemonSet pod does.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	admregv1 "k8s.io/api/admissionregistration/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/nodeview"
	"github.com/migpro/migpro/readmit"
)

// readmitStack is the webhook running and registered, and the agent's
// identity.
type readmitStack struct {
	cl      *harness.Cluster
	agentKC string // kubeconfig of the migpro-agent ServiceAccount
	admLog  string // migpro-admission's log
	view    string // migpro-admission's URL, where the node view is
}

// startReadmitStack sets up the stack; the agent's ServiceAccount gets
// rbac-readmit.yaml plus the extra RBAC manifests given (repository paths).
func startReadmitStack(t *testing.T, cl *harness.Cluster, extraAgentRBAC ...string) *readmitStack {
	t.Helper()
	root := repoRoot()
	agentRBAC := manifestDocs(t, filepath.Join(root, "deploy/kubernetes/rbac-readmit.yaml"), nil)
	for _, f := range extraAgentRBAC {
		agentRBAC = append(append(agentRBAC, "\n---\n"...), manifestDocs(t, filepath.Join(root, f), nil)...)
	}
	st := &readmitStack{cl: cl, agentKC: serviceAccountKubeconfig(t, cl, "migpro-agent", agentRBAC)}
	admission := filepath.Join(root, "deploy/kubernetes/admission.yaml")
	base, admLog, caPEM := startChartAdmission(t, cl)
	st.admLog, st.view = admLog, base
	registerWebhook(t, cl, admission, base+"/mutate", caPEM)
	registerEvictionGuard(t, cl, admission, base+"/validate-eviction", caPEM)
	st.waitWebhook(t)
	return st
}

// webhookProbe names the dry-run pods waitWebhook sends.
const webhookProbe = "migpro-webhook-probe"

// waitWebhook waits until the API server calls the mutating webhook: the
// API server loads a new configuration in its own time, and a pod created
// before that is never shown to the webhook. It sends dry-run pods (which
// change nothing) that ask for a MIG instance and have a controller, until
// the webhook logs one.
func (st *readmitStack) waitWebhook(t *testing.T) {
	t.Helper()
	yes := true
	i := 0
	eventually(t, "the API server to call the mutating webhook", 30*time.Second, func() bool {
		i++
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", webhookProbe, i), Namespace: "default",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: webhookProbe, UID: "probe", Controller: &yes}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{res1g5: resource.MustParse("1")}}}}},
		}
		if _, err := st.cl.Client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("dry-run probe pod: %v", err)
		}
		return strings.Contains(readFile(st.admLog), webhookProbe)
	})
}

// marker is the Marker as the agent on node runs it: its identity, with a
// token bound to its node (the eviction guard needs the node), its node,
// its reads through migpro-admission's node view (the chart's RBAC grants
// it no read of pods, ReplicaSets, Jobs or Namespaces); in evict mode
// unless opts say otherwise.
func (st *readmitStack) marker(t *testing.T, node string, opts ...readmit.Option) *readmit.Marker {
	logger := logrus.New()
	logger.SetOutput(testWriter{t})
	client := nodeview.ReadsThrough(nodeBoundAgent(t, st.cl, node), agentViewClient(t, st.cl, st.view, node))
	m, err := readmit.NewMarker(client, append([]readmit.Option{readmit.WithNodeName(node), readmit.WithLogger(logger),
		readmit.WithEvictBackoff(wait.Backoff{Duration: 300 * time.Millisecond, Factor: 1.5, Cap: 2 * time.Second, Steps: 60}),
		readmit.WithMode(readmit.ModeEvict)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// firstPod waits for the trainer's first pod and checks that the API server
// showed it to the webhook, which left it alone (no recommendation yet).
func (st *readmitStack) firstPod(t *testing.T, cl *harness.Cluster) *corev1.Pod {
	t.Helper()
	old := waitTrainerPod(t, cl.Client, "")
	if q := old.Spec.Containers[0].Resources.Limits[res1g5]; q.String() != "1" || old.Annotations[readmit.AnnotationReadmitted] != "" {
		t.Fatalf("first pod: limits %v annotations %v, want it unchanged", old.Spec.Containers[0].Resources.Limits, old.Annotations)
	}
	eventually(t, "the API server to call the webhook for the first pod", 30*time.Second, func() bool {
		for _, line := range strings.Split(readFile(st.admLog), "\n") {
			if strings.Contains(line, "no recommendation for the pod's controller") && !strings.Contains(line, webhookProbe) {
				return true
			}
		}
		return false
	})
	return old
}

// checkReplacement waits for the ReplicaSet's replacement of old and checks
// that the webhook moved its request to the recommended resource.
func (st *readmitStack) checkReplacement(t *testing.T, cl *harness.Cluster, old *corev1.Pod) *corev1.Pod {
	t.Helper()
	repl := waitTrainerPod(t, cl.Client, old.UID)
	main := repl.Spec.Containers[0].Resources
	for name, list := range map[string]corev1.ResourceList{"limits": main.Limits, "requests": main.Requests} {
		if q, ok := list[res2g10]; !ok || q.String() != "1" {
			t.Errorf("replacement %s %v: want %s: 1", name, list, res2g10)
		}
		if _, ok := list[res1g5]; ok {
			t.Errorf("replacement %s still ask for %s", name, res1g5)
		}
	}
	if !strings.Contains(repl.Annotations[readmit.AnnotationReadmitted], res2g10) {
		t.Errorf("replacement annotations %v", repl.Annotations)
	}
	if !strings.Contains(readFile(st.admLog), "eviction of a pod on the agent's own node allowed") {
		t.Errorf("the eviction guard did not see the eviction:\n%s", readFile(st.admLog))
	}
	if !strings.Contains(readFile(st.admLog), "MIG request rewritten") {
		t.Errorf("the webhook's log has no rewrite:\n%s", readFile(st.admLog))
	}
	t.Logf("replacement %s asks for %v (%s)", repl.Name, main.Limits, repl.Annotations[readmit.AnnotationReadmitted])
	return repl
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// manifestDocs returns the YAML documents of a manifest file, only those of
// the given kinds when kinds is not nil, joined again.
func manifestDocs(t *testing.T, path string, kinds map[string]bool) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep [][]byte
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		_, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if kinds == nil || kinds[gvk.Kind] {
			keep = append(keep, doc)
		}
	}
	return bytes.Join(keep, []byte("\n---\n"))
}

// serviceAccountKubeconfig makes ServiceAccount sa in migpro-system (or keeps
// the existing one), applies rbac with the real kubectl and returns a
// kubeconfig with a token of sa.
func serviceAccountKubeconfig(t *testing.T, cl *harness.Cluster, sa string, rbac []byte) string {
	t.Helper()
	ctx := context.Background()
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "migpro-system"}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().ServiceAccounts("migpro-system").Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: "migpro-system"}}, metav1.CreateOptions{})
		return err
	})
	f := filepath.Join(cl.Dir, sa+"-rbac.yaml")
	if err := os.WriteFile(f, rbac, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := cl.Kubectl(t, "apply", "-f", f); r.ExitCode != 0 || r.Err != nil {
		t.Fatalf("kubectl apply %s: exit %d %v\n%s", f, r.ExitCode, r.Err, r.Combined())
	}
	tok, err := cl.Client.CoreV1().ServiceAccounts("migpro-system").CreateToken(ctx, sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", sa, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cl.Server, CertificateAuthority: cl.CAFile}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: sa}
	kc.CurrentContext = "e2e"
	path := filepath.Join(cl.Dir, sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func ptrInt64(v int64) *int64 { return &v }

// startChartAdmission starts migpro-admission as its ServiceAccount, with
// the RBAC of deploy/kubernetes/admission.yaml, serving a certificate of
// the cluster's CA for 127.0.0.1: its URL, its log and that CA (PEM).
func startChartAdmission(t *testing.T, cl *harness.Cluster) (base, admLog string, caPEM []byte) {
	t.Helper()
	admission := filepath.Join(repoRoot(), "deploy/kubernetes/admission.yaml")
	admKC := serviceAccountKubeconfig(t, cl, "migpro-admission", manifestDocs(t, admission, map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true}))
	caPEM, err := os.ReadFile(cl.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := cl.ServingCert(t, "migpro-admission", "127.0.0.1")
	base, admLog = startAdmission(t, admKC, certFile, keyFile, caPEM)
	return base, admLog, caPEM
}

// startAdmission builds and runs migpro-admission and waits for /healthz;
// it returns its base URL (https://host:port) and the log path.
func startAdmission(t *testing.T, kubeconfig, certFile, keyFile string, caPEM []byte) (string, string) {
	t.Helper()
	bin := migproBin(t, "migpro-admission")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(t.TempDir(), "admission.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--listen", addr, "--tls-cert", certFile, "--tls-key", keyFile, "--kubeconfig", kubeconfig, "--log-level", "debug")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		logf.Close()
		harness.KeepLog(t, "migpro-admission", logPath)
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	eventually(t, "migpro-admission /healthz", 30*time.Second, func() bool {
		resp, err := hc.Get("https://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return "https://" + addr, logPath
}

// registerWebhook creates the manifest's MutatingWebhookConfiguration with
// its clientConfig pointed at url and trusting caPEM.
func registerWebhook(t *testing.T, cl *harness.Cluster, manifest, url string, caPEM []byte) {
	t.Helper()
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(manifestDocs(t, manifest, map[string]bool{"MutatingWebhookConfiguration": true}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	mwc := obj.(*admregv1.MutatingWebhookConfiguration)
	if len(mwc.Webhooks) != 1 || *mwc.Webhooks[0].FailurePolicy != admregv1.Ignore {
		t.Fatalf("manifest webhook %+v, want one with failurePolicy Ignore", mwc.Webhooks)
	}
	mwc.Webhooks[0].ClientConfig = admregv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
	if _, err := cl.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(context.Background(), mwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("register webhook: %v", err)
	}
}

// registerEvictionGuard creates the manifest's ValidatingWebhookConfiguration
// (the eviction guard) with its clientConfig pointed at url and trusting
// caPEM. The API server loads it within about a second.
func registerEvictionGuard(t *testing.T, cl *harness.Cluster, manifest, url string, caPEM []byte) {
	t.Helper()
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(manifestDocs(t, manifest, map[string]bool{"ValidatingWebhookConfiguration": true}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	vwc := obj.(*admregv1.ValidatingWebhookConfiguration)
	if len(vwc.Webhooks) == 0 {
		t.Fatal("manifest eviction guard has no webhook")
	}
	// url names the eviction guard's path; every webhook of the
	// configuration (the recommendation guard too) is served beside it.
	base := strings.TrimSuffix(url, "/validate-eviction")
	for i := range vwc.Webhooks {
		w := &vwc.Webhooks[i]
		if *w.FailurePolicy != admregv1.Fail || w.ClientConfig.Service == nil || w.ClientConfig.Service.Path == nil {
			t.Fatalf("manifest webhook %s: want failurePolicy Fail and a service path", w.Name)
		}
		u := base + *w.ClientConfig.Service.Path
		w.ClientConfig = admregv1.WebhookClientConfig{URL: &u, CABundle: caPEM}
	}
	if _, err := cl.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), vwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("register the eviction guard: %v", err)
	}
}

// testWriter sends a logger's lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
