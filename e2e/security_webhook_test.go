//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migpro/migpro/e2e/harness"
)

// The webhook answers only the API server (issue 33, low 6). The API server
// is configured, as its admission configuration allows, with a client
// certificate for the webhook, and migpro-admission runs with --client-ca:
// the API server's calls reach the eviction guard (an eviction of a pod on
// another node is refused by it, one on the agent's node is allowed),
// while an in-cluster client posting a forged review (a user bound to
// node gpu-b asking about pod team/on-b) without that certificate, or with
// one of another CA, gets 403 and nothing about the pod. Without
// --client-ca the same forged review is answered, and the answer differs
// by where the pod runs: that is the leak.
func TestSecurityWebhookAnswersOnlyTheAPIServer(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "webhook-callers")
	clientCert, clientKey := ca.issue(t, dir, "apiserver-webhook-client")
	caFile := filepath.Join(dir, "callers-ca.crt")
	if err := os.WriteFile(caFile, ca.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	webhookKC := filepath.Join(dir, "webhook.kubeconfig")
	writeFile(t, webhookKC, "apiVersion: v1\nkind: Config\nusers:\n- name: \""+addr+"\"\n  user:\n    client-certificate: "+clientCert+"\n    client-key: "+clientKey+"\n")
	admCfg := filepath.Join(dir, "admission.yaml")
	plugin := func(name string) string {
		return "- name: " + name + "\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: " + webhookKC + "\n"
	}
	writeFile(t, admCfg, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"+plugin("ValidatingAdmissionWebhook")+plugin("MutatingAdmissionWebhook"))
	cl := harness.StartClusterWith(t, "--admission-control-config-file", admCfg)
	ctx := context.Background()
	root := repoRoot()
	for _, n := range []string{"gpu-a", "gpu-b"} {
		mustCreate(t, func() error {
			_, err := cl.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
			return err
		})
	}
	agent := chartAgentOnNode(t, cl, "gpu-a")
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
		return err
	})
	uids := map[string]string{}
	for name, node := range map[string]string{"on-a": "gpu-a", "on-b": "gpu-b"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox:good"}}}}
		mustCreate(t, func() error {
			p, err := cl.Client.CoreV1().Pods("team").Create(ctx, pod, metav1.CreateOptions{})
			if err == nil {
				uids[name] = string(p.UID)
			}
			return err
		})
	}

	admission := filepath.Join(root, "deploy/kubernetes/admission.yaml")
	admKC := serviceAccountKubeconfig(t, cl, "migpro-admission", manifestDocs(t, admission, map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true}))
	servingPEM, err := os.ReadFile(cl.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := cl.ServingCert(t, "migpro-admission", "127.0.0.1")
	forged := forgedEvictionReview(uids["on-b"])
	post := func(cert *tls.Certificate) (int, string) {
		t.Helper()
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(servingPEM)
		tc := &tls.Config{RootCAs: pool}
		if cert != nil {
			tc.Certificates = []tls.Certificate{*cert}
		}
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
		resp, err := hc.Post("https://"+addr+"/validate-eviction", "application/json", bytes.NewReader(forged))
		if err != nil {
			t.Fatalf("posting a review: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// Without --client-ca (the old default) anyone may ask, and learns.
	stop := runAdmission(t, addr, servingPEM, "--tls-cert", certFile, "--tls-key", keyFile, "--kubeconfig", admKC)
	code, body := post(nil)
	if code != http.StatusOK || !strings.Contains(body, `"allowed":true`) {
		t.Fatalf("without --client-ca, a forged review of a pod on the node it names: %d %s (want an answer, allowed: the leak this test must see closed)", code, body)
	}
	stop()

	runAdmission(t, addr, servingPEM, "--tls-cert", certFile, "--tls-key", keyFile, "--kubeconfig", admKC, "--client-ca", caFile)
	registerEvictionGuard(t, cl, admission, "https://"+addr+"/validate-eviction", servingPEM)
	evict := func(name string) error {
		uid := types.UID(uids[name])
		return agent.CoreV1().Pods("team").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
			DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}, Preconditions: &metav1.Preconditions{UID: &uid}}})
	}
	var errB error
	eventually(t, "the API server to call the eviction guard", 30*time.Second, func() bool {
		errB = evict("on-b")
		return errB != nil
	})
	if !apierrors.IsForbidden(errB) || !strings.Contains(errB.Error(), "may evict only pods on its own node") {
		t.Fatalf("the agent's eviction of a pod on another node, through the API server with its client certificate: %v, want the guard's refusal", errB)
	}
	if err := evict("on-a"); err != nil {
		t.Fatalf("the agent's (dry-run) eviction of a pod on its node: %v, want allowed (the API server's calls must pass)", err)
	}
	other := newTestCA(t, "someone-else")
	oc, ok := other.issue(t, dir, "in-cluster-client")
	for what, cert := range map[string]*tls.Certificate{"no certificate": nil, "a certificate of another CA": loadPair(t, oc, ok)} {
		code, body := post(cert)
		if code != http.StatusForbidden || strings.Contains(body, "allowed") || strings.Contains(body, "on-b") || strings.Contains(body, uids["on-b"]) {
			t.Errorf("a forged review with %s: %d %q, want 403 saying nothing about the pod", what, code, body)
		}
	}
	if code, body := post(loadPair(t, clientCert, clientKey)); code != http.StatusOK || !strings.Contains(body, `"allowed":true`) {
		t.Errorf("a review with the API server's client certificate: %d %s, want an answer", code, body)
	}
}

// forgedEvictionReview is what any in-cluster client could post: the
// agent's user bound to gpu-b, asking to evict team/on-b.
func forgedEvictionReview(uid string) []byte {
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","kind":{"group":"policy","version":"v1","kind":"Eviction"},` +
		`"resource":{"group":"","version":"v1","resource":"pods"},"subResource":"eviction","name":"on-b","namespace":"team","operation":"CREATE",` +
		`"userInfo":{"username":"system:serviceaccount:migpro-system:migpro-agent","extra":{"authentication.kubernetes.io/node-name":["gpu-b"]}},` +
		`"object":{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"on-b","namespace":"team"},"deleteOptions":{"preconditions":{"uid":"` + uid + `"}}}}}`)
}

// runAdmission starts the built migpro-admission on addr and waits for its
// /healthz (which needs no client certificate); the returned func stops it.
func runAdmission(t *testing.T, addr string, servingPEM []byte, args ...string) func() {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "admission.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(migproBin(t, "migpro-admission"), append([]string{"--listen", addr, "--log-level", "debug"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			logf.Close()
			harness.KeepLog(t, "migpro-admission", logPath)
		}
	}
	t.Cleanup(stop)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(servingPEM)
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	eventually(t, "migpro-admission /healthz", 30*time.Second, func() bool {
		resp, err := hc.Get("https://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return stop
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, cn string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a client certificate and key signed by the CA into dir.
func (c testCA) issue(t *testing.T, dir, cn string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	return certFile, keyFile
}

func loadPair(t *testing.T, certFile, keyFile string) *tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
