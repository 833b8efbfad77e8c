package deploy

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"strings"
	"testing"

	admregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// rendered is the chart rendered by `helm template` with some values.
type rendered struct {
	kinds []string                  // every document's kind, in order
	docs  map[string][]byte         // kind/name -> YAML
	other map[string]map[string]any // kind/name -> objects of kinds client-go does not know
	ds    *appsv1.DaemonSet         // the first (default) agent DaemonSet
	dss   []*appsv1.DaemonSet       // every agent DaemonSet (one per node configuration)
	out   string                    // the whole render
}

func renderChart(t *testing.T, args ...string) rendered {
	t.Helper()
	helm := helmBinary(t)
	cmd := exec.Command(helm, append([]string{"template", "migpro", "helm/migpro"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr.String())
	}
	r := rendered{docs: map[string][]byte{}, other: map[string]map[string]any{}, out: string(out)}
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil || meta.Kind == "" {
			continue
		}
		key := meta.Kind + "/" + meta.Metadata.Name
		r.kinds = append(r.kinds, meta.Kind)
		r.docs[key] = doc
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			var m map[string]any
			if err := yaml.Unmarshal(doc, &m); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			r.other[key] = m
			continue
		}
		if ds, ok := obj.(*appsv1.DaemonSet); ok {
			r.dss = append(r.dss, ds)
			if r.ds == nil {
				r.ds = ds
			}
		}
	}
	if r.ds == nil {
		t.Fatalf("helm template %v rendered no DaemonSet", args)
	}
	return r
}

func (r rendered) decode(t *testing.T, key string, into any) {
	t.Helper()
	doc, ok := r.docs[key]
	if !ok {
		t.Fatalf("no %s rendered (have %v)", key, r.kinds)
	}
	if err := yaml.Unmarshal(doc, into); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

func (r rendered) agentArgs() string {
	return strings.Join(r.ds.Spec.Template.Spec.Containers[0].Args, " ")
}

// TestChartDefaults: the namespace comes first, images are tagged with the
// chart's appVersion (never latest), nothing is mounted under /proc, and the
// real-driver flags point at mounts that exist.
func TestChartDefaults(t *testing.T) {
	r := renderChart(t)
	if r.kinds[0] != "Namespace" {
		t.Errorf("first rendered kind %s, want Namespace (order %v)", r.kinds[0], r.kinds)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	b, err := os.ReadFile("helm/migpro/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %v", err)
	}
	var dep appsv1.Deployment
	r.decode(t, "Deployment/migpro-admission", &dep)
	pod := r.ds.Spec.Template.Spec
	images := []string{dep.Spec.Template.Spec.Containers[0].Image}
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		images = append(images, c.Image)
	}
	for _, img := range images {
		if !strings.HasSuffix(img, ":"+chart.AppVersion) {
			t.Errorf("image %s: want the tag %s (the chart's appVersion)", img, chart.AppVersion)
		}
	}
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		for _, m := range c.VolumeMounts {
			if m.MountPath == "/proc" || strings.HasPrefix(m.MountPath, "/proc/") {
				t.Errorf("container %s mounts %s under /proc: runc refuses it", c.Name, m.MountPath)
			}
		}
	}
	mounts := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	for flag, want := range map[string]string{"--driver-root=": "/", "--nvidia-capabilities-dir=": "/proc/driver/nvidia/capabilities"} {
		i := strings.Index(r.agentArgs(), flag)
		if i < 0 {
			t.Errorf("agent args %q lack %s", r.agentArgs(), flag)
			continue
		}
		path := strings.Fields(r.agentArgs()[i+len(flag):])[0]
		if got := hostPaths[mounts[path]]; got != want {
			t.Errorf("%s%s is the host's %q, want %q", flag, path, got, want)
		}
	}
	if !pod.HostPID || pod.PriorityClassName != "system-node-critical" {
		t.Errorf("hostPID %v, priorityClassName %q", pod.HostPID, pod.PriorityClassName)
	}
	tolerated := false
	for _, tol := range pod.Tolerations {
		tolerated = tolerated || (tol.Key == "nvidia.com/gpu" && tol.Effect == corev1.TaintEffectNoSchedule)
	}
	if !tolerated {
		t.Errorf("tolerations %v lack nvidia.com/gpu:NoSchedule", pod.Tolerations)
	}
	c := pod.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %+v liveness %+v", c.ReadinessProbe, c.LivenessProbe)
	}
}

// TestChartSimulate: simulate passes --simulate, the simulated node's root
// under the state directory (mounted at its host path) and the image's
// simulated driver stubs, and mounts no driver.
func TestChartSimulate(t *testing.T) {
	r := renderChart(t, "--set", "simulate=a100-40gb:2")
	args := r.agentArgs()
	for _, want := range []string{"--simulate=a100-40gb:2", "--sim-root=/var/lib/migpro/sim", "--sim-driver=/usr/local/lib/migpro/simdriver"} {
		if !strings.Contains(args, want) {
			t.Errorf("agent args %q lack %s", args, want)
		}
	}
	if strings.Contains(args, "--driver-root") {
		t.Errorf("agent args %q", args)
	}
	if def := renderChart(t).agentArgs(); strings.Contains(def, "--sim-") {
		t.Errorf("agent args without simulate %q", def)
	}
	for _, v := range r.ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil && strings.HasPrefix(v.HostPath.Path, "/proc") || v.Name == "driver-root" {
			t.Errorf("simulated agent mounts %s (%+v)", v.Name, v.HostPath)
		}
	}
}

// TestChartGeneratedCertificate: without cert-manager the chart makes a CA
// and a serving certificate for the webhook's Service and fills both webhook
// configurations' caBundle with that CA.
func TestChartGeneratedCertificate(t *testing.T) {
	r := renderChart(t)
	var sec corev1.Secret
	r.decode(t, "Secret/migpro-admission-tls", &sec)
	ca, crt := sec.Data["ca.crt"], sec.Data["tls.crt"]
	if len(ca) == 0 || len(crt) == 0 || len(sec.Data["tls.key"]) == 0 {
		t.Fatalf("Secret keys %v", keys(sec.Data))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("ca.crt is not a PEM certificate")
	}
	blk, _ := pem.Decode(crt)
	if blk == nil {
		t.Fatal("tls.crt is not PEM")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "migpro-admission.migpro-system.svc", Roots: pool}); err != nil {
		t.Errorf("serving certificate for the Service: %v", err)
	}
	var mwc admregv1.MutatingWebhookConfiguration
	r.decode(t, "MutatingWebhookConfiguration/migpro-readmit", &mwc)
	var vwc admregv1.ValidatingWebhookConfiguration
	r.decode(t, "ValidatingWebhookConfiguration/migpro-agent-evictions", &vwc)
	for name, bundle := range map[string][]byte{"readmit": mwc.Webhooks[0].ClientConfig.CABundle, "evictions": vwc.Webhooks[0].ClientConfig.CABundle} {
		if !bytes.Equal(bundle, ca) {
			t.Errorf("%s webhook caBundle is not the generated CA", name)
		}
	}
}

// TestChartCertManager: with cert-manager's API served, a self-signed Issuer
// and a Certificate make the Secret and cert-manager injects the CA.
func TestChartCertManager(t *testing.T) {
	r := renderChart(t, "--api-versions", "cert-manager.io/v1")
	if _, ok := r.docs["Secret/migpro-admission-tls"]; ok {
		t.Error("with cert-manager the chart still renders its own Secret")
	}
	crt, ok := r.other["Certificate/migpro-admission"]
	if !ok {
		t.Fatalf("no Certificate (kinds %v)", r.kinds)
	}
	spec, _ := crt["spec"].(map[string]any)
	if spec["secretName"] != "migpro-admission-tls" || !strings.Contains(string(r.docs["Certificate/migpro-admission"]), "migpro-admission.migpro-system.svc") {
		t.Errorf("Certificate spec %v", spec)
	}
	if _, ok := r.other["Issuer/migpro-admission-selfsigned"]; !ok {
		t.Errorf("no Issuer (kinds %v)", r.kinds)
	}
	for _, key := range []string{"MutatingWebhookConfiguration/migpro-readmit", "ValidatingWebhookConfiguration/migpro-agent-evictions"} {
		if !strings.Contains(string(r.docs[key]), "cert-manager.io/inject-ca-from: migpro-system/migpro-admission") {
			t.Errorf("%s lacks the inject-ca-from annotation", key)
		}
	}
}

// TestChartEvictionNeedsTheGuard: the agent may evict only where the
// admission eviction guard keeps it on its own node. With admission off the
// ClusterRole grants no pods/eviction, so a compromised node cannot evict
// pods elsewhere in the cluster.
func TestChartEvictionNeedsTheGuard(t *testing.T) {
	for _, tc := range []struct {
		set       []string
		wantEvict bool
	}{
		{nil, true},
		{[]string{"--set", "admission.enabled=false"}, false},
	} {
		r := renderChart(t, tc.set...)
		var role rbacv1.ClusterRole
		r.decode(t, "ClusterRole/migpro-agent-readmit", &role)
		evict := false
		for _, rule := range role.Rules {
			for _, res := range rule.Resources {
				if res == "pods/eviction" {
					evict = true
				}
			}
		}
		_, guard := r.docs["ValidatingWebhookConfiguration/migpro-agent-evictions"]
		if evict != tc.wantEvict || guard != tc.wantEvict {
			t.Errorf("%v: pods/eviction granted %v, eviction guard rendered %v; want both %v", tc.set, evict, guard, tc.wantEvict)
		}
	}
}

func keys(m map[string][]byte) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}

// TestChartServiceMonitor: off by default; on, a headless Service selects
// the agent's pods on the metrics port and a ServiceMonitor scrapes
// /metrics through it.
func TestChartServiceMonitor(t *testing.T) {
	if _, ok := renderChart(t).other["ServiceMonitor/migpro-agent"]; ok {
		t.Error("a ServiceMonitor is rendered by default")
	}
	r := renderChart(t, "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.port=9555",
		"--set", "metrics.serviceMonitor.interval=15s")
	var svc corev1.Service
	r.decode(t, "Service/migpro-agent-metrics", &svc)
	podLabels := r.ds.Spec.Template.Labels
	for k, v := range svc.Spec.Selector {
		if podLabels[k] != v {
			t.Errorf("Service selects %s=%s; the agent's pods have %v", k, v, podLabels)
		}
	}
	port := svc.Spec.Ports[0]
	var named bool
	for _, p := range r.ds.Spec.Template.Spec.Containers[0].Ports {
		named = named || (p.Name == port.TargetPort.StrVal && p.ContainerPort == 9555)
	}
	if port.Port != 9555 || !named {
		t.Errorf("Service port %+v does not reach the agent's metrics port 9555", port)
	}
	sm, ok := r.other["ServiceMonitor/migpro-agent"]
	if !ok {
		t.Fatalf("no ServiceMonitor (kinds %v)", r.kinds)
	}
	spec, _ := sm["spec"].(map[string]any)
	eps, _ := spec["endpoints"].([]any)
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v", spec["endpoints"])
	}
	ep, _ := eps[0].(map[string]any)
	if ep["port"] != port.Name || ep["path"] != "/metrics" || ep["interval"] != "15s" {
		t.Errorf("ServiceMonitor endpoint %v, want port %s, /metrics, 15s", ep, port.Name)
	}
	sel, _ := spec["selector"].(map[string]any)
	match, _ := sel["matchLabels"].(map[string]any)
	if len(match) == 0 || len(svc.Spec.Selector) == 0 {
		t.Fatalf("empty selectors: ServiceMonitor %v, Service %v", match, svc.Spec.Selector)
	}
	for k, v := range match {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%v; the Service has %v", k, v, svc.Labels)
		}
	}
}
