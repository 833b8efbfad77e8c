//go:build e2e

package e2e

// Readmission against a real control plane: the real migpro-admission
// webhook, called by the real kube-apiserver, rewrites the replacement of a
// pod the Marker evicted through the Eviction API.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
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
	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/telemetry"
	"github.com/migpro/migpro/readmit"
)

const (
	readmitNS   = "readmit-e2e"
	readmitNode = "readmit-node"
	res1g5      = "nvidia.com/mig-1g.5gb"
	res2g10     = "nvidia.com/mig-2g.10gb"
)

// toReadmitMark is how the agent hands its mark to the Marker (the lines
// docs/readmit.md gives for agent wiring).
func toReadmitMark(m agent.Mark) readmit.Mark {
	return readmit.Mark{PodNamespace: m.Container.PodNamespace, PodName: m.Container.PodName, PodUID: m.Container.PodUID,
		ContainerName: m.Container.ContainerName, FromProfile: m.Profile, ToProfile: m.Decision.Profile,
		ForecastBytes: m.Decision.Forecast, Reason: string(m.Decision.Reason), Fits: m.Decision.Fits}
}

func TestReadmit(t *testing.T) {
	cl := harness.StartCluster(t)
	ctx := context.Background()
	root := repoRoot()

	// Identities with exactly the RBAC the manifests give.
	agentKC := readmitIdentity(t, cl, "migpro-agent", manifestDocs(t, filepath.Join(root, "deploy/kubernetes/rbac-readmit.yaml"), nil))
	admDocs := manifestDocs(t, filepath.Join(root, "deploy/kubernetes/admission.yaml"), map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true})
	admKC := readmitIdentity(t, cl, "migpro-admission", admDocs)

	// The webhook, from this tree, over TLS with a CA made here, registered
	// with the manifest's MutatingWebhookConfiguration pointed at it.
	caPEM, certFile, keyFile := webhookCerts(t)
	url, admLog := startAdmission(t, admKC, certFile, keyFile, caPEM)
	registerWebhook(t, cl, filepath.Join(root, "deploy/kubernetes/admission.yaml"), url, caPEM)

	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: readmitNS}}, metav1.CreateOptions{})
		return err
	})
	// No kubelet: the node object exists (so pod GC keeps its pods) and the
	// test plays the kubelet's part by reporting the pod Running and Ready.
	// A Pending pod would not do: the Eviction API ignores PDBs for it.
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: readmitNode}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := cl.Client.AppsV1().Deployments(readmitNS).Create(ctx, trainerDeployment(), metav1.CreateOptions{})
		return err
	})
	old := waitTrainerPod(t, cl.Client, "")
	if q := old.Spec.Containers[0].Resources.Limits[res1g5]; q.String() != "1" || old.Annotations[readmit.AnnotationReadmitted] != "" {
		t.Fatalf("first pod: limits %v annotations %v, want it unchanged", old.Spec.Containers[0].Resources.Limits, old.Annotations)
	}
	eventually(t, "the API server to call the webhook for the first pod", 30*time.Second, func() bool {
		return strings.Contains(readFile(admLog), "no recommendation for the pod's controller")
	})
	old = reportRunning(t, cl.Client, old)

	// A PDB that allows no disruption: the eviction must wait.
	minAvail := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: readmitNS},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvail, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "trainer"}}}}
	mustCreate(t, func() error {
		_, err := cl.Client.PolicyV1().PodDisruptionBudgets(readmitNS).Create(ctx, pdb, metav1.CreateOptions{})
		return err
	})
	eventually(t, "the PDB to count the pod healthy", 30*time.Second, func() bool {
		p, err := cl.Client.PolicyV1().PodDisruptionBudgets(readmitNS).Get(ctx, "trainer", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration >= p.Generation && p.Status.CurrentHealthy == 1 && p.Status.DisruptionsAllowed == 0
	})

	// The Marker, with the agent's identity, on the mark the agent would send.
	agentCS := clientFor(t, agentKC)
	logger := logrus.New()
	logger.SetOutput(testWriter{t})
	marker := readmit.NewMarker(agentCS, readmit.WithNodeName(readmitNode), readmit.WithLogger(logger),
		readmit.WithEvictBackoff(wait.Backoff{Duration: 300 * time.Millisecond, Factor: 1.5, Cap: 2 * time.Second, Steps: 60}))
	mark := toReadmitMark(agent.Mark{
		Container: telemetry.Registration{ID: "c1", MIGUUIDs: []string{"MIG-e2e"}, PodNamespace: old.Namespace,
			PodName: old.Name, PodUID: string(old.UID), ContainerName: "main"},
		UUID: "MIG-e2e", Profile: "1g.5gb",
		Decision: predictor.Decision{Reason: predictor.ReasonTimeToOOM, Forecast: 7 << 30, Profile: "2g.10gb", Fits: true},
	})
	type result struct {
		out readmit.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() { o, err := marker.Handle(ctx, mark); done <- result{o, err} }()

	eventually(t, "the blocked eviction to be reported", 30*time.Second, func() bool {
		return podEvents(t, cl.Client, old.Name)[readmit.ReasonEvictionBlocked] != ""
	})
	select {
	case r := <-done:
		t.Fatalf("the Marker returned while the PDB forbids eviction: %+v %v", r.out, r.err)
	default:
	}
	evs := podEvents(t, cl.Client, old.Name)
	t.Logf("events while blocked: %v", evs)
	if m := evs[readmit.ReasonPredictedOOM]; !strings.Contains(m, res2g10) || !strings.Contains(m, "7.00 GiB") {
		t.Errorf("PredictedOOM event %q", m)
	}
	if m := evs[readmit.ReasonEvictionBlocked]; !strings.Contains(m, "disruption budget") {
		t.Errorf("blocked event %q does not name the budget", m)
	}
	cur, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil || cur.DeletionTimestamp != nil {
		t.Fatalf("the pod must still run while the PDB blocks: %v %v", err, cur.DeletionTimestamp)
	}
	var pred readmit.PredictedOOM
	if err := json.Unmarshal([]byte(cur.Annotations[readmit.AnnotationPredictedOOM]), &pred); err != nil ||
		pred.From != res1g5 || pred.To != res2g10 || pred.Container != "main" || pred.Node != readmitNode {
		t.Errorf("annotation %q: %+v %v", cur.Annotations[readmit.AnnotationPredictedOOM], pred, err)
	}
	ctrl := metav1.GetControllerOf(cur)
	store := readmit.Store{Client: cl.Client}
	rec, err := store.Get(ctx, readmitNS, readmit.Controller{APIVersion: ctrl.APIVersion, Kind: ctrl.Kind, Name: ctrl.Name, UID: ctrl.UID})
	if err != nil || rec == nil {
		t.Fatalf("recommendation for %s/%s: %+v %v", ctrl.Kind, ctrl.Name, rec, err)
	}
	if to, ok := rec.Target("main", res1g5); !ok || to != res2g10 {
		t.Fatalf("recommendation %+v", rec)
	}

	// The budget goes: the retry evicts.
	if err := cl.Client.PolicyV1().PodDisruptionBudgets(readmitNS).Delete(ctx, "trainer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the Marker did not evict within 60 s of the PDB's removal")
	}
	if r.err != nil || !r.out.Evicted || r.out.To != res2g10 {
		t.Fatalf("Marker: %+v %v", r.out, r.err)
	}
	if p, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, old.Name, metav1.GetOptions{}); err == nil && p.DeletionTimestamp == nil {
		t.Fatal("the pod is neither gone nor terminating after its eviction")
	}

	// The ReplicaSet's replacement asks for the recommended profile, rewritten
	// by the webhook the API server called.
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
	if !strings.Contains(readFile(admLog), "MIG request rewritten") {
		t.Errorf("the webhook's log has no rewrite:\n%s", readFile(admLog))
	}
	t.Logf("replacement %s asks for %v (%s)", repl.Name, main.Limits, repl.Annotations[readmit.AnnotationReadmitted])

	// Marking again changes nothing.
	cmName := readmit.StoreName(ctrl.Kind, ctrl.Name)
	before, _ := cl.Client.CoreV1().ConfigMaps(readmitNS).Get(ctx, cmName, metav1.GetOptions{})
	if out, err := marker.Handle(ctx, mark); err != nil {
		t.Fatalf("second mark: %+v %v", out, err)
	}
	after, _ := cl.Client.CoreV1().ConfigMaps(readmitNS).Get(ctx, cmName, metav1.GetOptions{})
	if before.ResourceVersion != after.ResourceVersion {
		t.Errorf("second mark rewrote the recommendation")
	}

	// The recommendation goes with its controller.
	bg := metav1.DeletePropagationBackground
	if err := cl.Client.AppsV1().Deployments(readmitNS).Delete(ctx, "trainer", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the garbage collector to remove the recommendation with the ReplicaSet", 60*time.Second, func() bool {
		_, err := cl.Client.CoreV1().ConfigMaps(readmitNS).Get(ctx, cmName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func trainerDeployment() *appsv1.Deployment {
	one := resource.MustParse("1")
	labels := map[string]string{"app": "trainer"}
	replicas := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: readmitNS},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeName: readmitNode,
				Containers: []corev1.Container{{Name: "main", Image: harness.BusyboxImageName, ImagePullPolicy: corev1.PullNever,
					Command:   []string{"sleep", "3600"},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{res1g5: one}}}},
			}}},
	}
}

// waitTrainerPod waits for a live pod of the trainer Deployment other than
// the one with uid not.
func waitTrainerPod(t *testing.T, cs kubernetes.Interface, not types.UID) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	eventually(t, "a trainer pod", 60*time.Second, func() bool {
		list, err := cs.CoreV1().Pods(readmitNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app=trainer"})
		if err != nil {
			return false
		}
		for i := range list.Items {
			if p := &list.Items[i]; p.DeletionTimestamp == nil && p.UID != not {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

// reportRunning writes the status a kubelet would: Running and Ready.
func reportRunning(t *testing.T, cs kubernetes.Interface, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	now := metav1.Now()
	p = p.DeepCopy()
	p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &now
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	out, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("report pod running: %v", err)
	}
	return out
}

// podEvents maps reason → message of the events on a pod.
func podEvents(t *testing.T, cs kubernetes.Interface, pod string) map[string]string {
	t.Helper()
	list, err := cs.CoreV1().Events(readmitNS).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod).String()})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range list.Items {
		out[e.Reason] = e.Message
	}
	return out
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

// readmitIdentity makes ServiceAccount sa in migpro-system, applies rbac with
// the real kubectl and returns a kubeconfig with a token of sa.
func readmitIdentity(t *testing.T, cl *harness.Cluster, sa string, rbac []byte) string {
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

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// webhookCerts makes a CA and a serving certificate for 127.0.0.1.
func webhookCerts(t *testing.T) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "readmit-e2e-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "migpro-admission"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), certFile, keyFile
}

// startAdmission builds and runs migpro-admission and waits for /healthz;
// it returns the webhook URL and the log path.
func startAdmission(t *testing.T, kubeconfig, certFile, keyFile string, caPEM []byte) (string, string) {
	t.Helper()
	bin, err := goBuild(t.TempDir(), "github.com/migpro/migpro/cmd/migpro-admission")
	if err != nil {
		t.Fatal(err)
	}
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
		if t.Failed() {
			t.Logf("migpro-admission log:\n%s", readFile(logPath))
		}
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
	return "https://" + addr + "/mutate", logPath
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

// testWriter sends a logger's lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
