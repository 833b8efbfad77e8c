package deploy

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestChartValuesTakeEffect: every value an admin sets changes the render,
// where it should. Each case renders the chart with one value and checks
// the object it must change, and that the render differs from the defaults.
func TestChartValuesTakeEffect(t *testing.T) {
	base := renderChart(t).out
	webhook := func(t *testing.T, r rendered) corev1.PodSpec {
		t.Helper()
		var d appsv1.Deployment
		r.decode(t, "Deployment/migpro-admission", &d)
		return d.Spec.Template.Spec
	}
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, r rendered)
	}{
		{"imagePullSecrets", []string{"--set", "imagePullSecrets[0].name=regcred"}, func(t *testing.T, r rendered) {
			if ps := r.ds.Spec.Template.Spec.ImagePullSecrets; len(ps) != 1 || ps[0].Name != "regcred" {
				t.Errorf("agent imagePullSecrets %v", ps)
			}
			if ps := webhook(t, r).ImagePullSecrets; len(ps) != 1 || ps[0].Name != "regcred" {
				t.Errorf("webhook imagePullSecrets %v", ps)
			}
		}},
		{"podAnnotations", []string{"--set", "podAnnotations.team=gpu", "--set", "admission.podAnnotations.team=web"}, func(t *testing.T, r rendered) {
			if a := r.ds.Spec.Template.Annotations["team"]; a != "gpu" {
				t.Errorf("agent pod annotation team=%q", a)
			}
			var d appsv1.Deployment
			r.decode(t, "Deployment/migpro-admission", &d)
			if a := d.Spec.Template.Annotations["team"]; a != "web" {
				t.Errorf("webhook pod annotation team=%q", a)
			}
		}},
		{"updateStrategy", []string{"--set", "updateStrategy.type=OnDelete", "--set", "updateStrategy.rollingUpdate=null"}, func(t *testing.T, r rendered) {
			if s := r.ds.Spec.UpdateStrategy; s.Type != appsv1.OnDeleteDaemonSetStrategyType || s.RollingUpdate != nil {
				t.Errorf("updateStrategy %+v", s)
			}
		}},
		{"fullnameOverride", []string{"--set", "fullnameOverride=gpu2", "--set", "dra.enabled=true"}, func(t *testing.T, r rendered) {
			// DeviceClasses are the driver's, one set per cluster.
			for key := range r.docs {
				name := key[strings.Index(key, "/")+1:]
				if key != "Namespace/migpro-system" && !strings.HasPrefix(key, "DeviceClass/") && !strings.HasPrefix(name, "gpu2-") {
					t.Errorf("%s keeps a fixed name", key)
				}
			}
			if !strings.Contains(r.out, "system:serviceaccount:migpro-system:gpu2-agent") {
				t.Error("the agent's user in the policies and --agent-user is not the renamed ServiceAccount")
			}
			var b rbacv1.ClusterRoleBinding
			r.decode(t, "ClusterRoleBinding/gpu2-agent-dra", &b)
			if len(b.Subjects) != 1 || b.Subjects[0].Name != "gpu2-agent" {
				t.Errorf("the DRA binding's subjects %+v, want the renamed ServiceAccount gpu2-agent", b.Subjects)
			}
		}},
		{"nameOverride", []string{"--set", "nameOverride=other"}, func(t *testing.T, r rendered) {
			if r.ds.Name != "other-agent" {
				t.Errorf("DaemonSet %s", r.ds.Name)
			}
		}},
		{"securityContext", []string{"--set", "securityContext.privileged=false", "--set", "securityContext.capabilities.add[0]=SYS_ADMIN"}, func(t *testing.T, r rendered) {
			sc := r.ds.Spec.Template.Spec.Containers[0].SecurityContext
			if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil || len(sc.Capabilities.Add) != 1 {
				t.Errorf("agent securityContext %+v", sc)
			}
		}},
		{"reserveAfter", []string{"--set", "reserveAfter=5m"}, func(t *testing.T, r rendered) {
			if args := r.agentArgs(); !strings.Contains(args, "--reserve-after=5m") {
				t.Errorf("agent args %s, want --reserve-after=5m", args)
			}
		}},
		{"kubeletRootDir", []string{"--set", "kubeletRootDir=/var/lib/k0s/kubelet"}, func(t *testing.T, r rendered) {
			// The PodResources socket follows --root-dir; the kubelet's
			// device-plugin directory does not (devicePluginDir).
			args := r.agentArgs()
			for _, want := range []string{"--pod-resources=/var/lib/k0s/kubelet/pod-resources/kubelet.sock", "--plugin-dir=/var/lib/kubelet/device-plugins"} {
				if !strings.Contains(args, want) {
					t.Errorf("args %s lack %s", args, want)
				}
			}
			if !hasHostPath(r, "/var/lib/k0s/kubelet/pod-resources") || hasHostPath(r, "/var/lib/kubelet/pod-resources") {
				t.Errorf("pod-resources volume not moved: %+v", r.ds.Spec.Template.Spec.Volumes)
			}
		}},
		{"devicePluginDir", []string{"--set", "devicePluginDir=/var/lib/k0s/kubelet/device-plugins"}, func(t *testing.T, r rendered) {
			if !strings.Contains(r.agentArgs(), "--plugin-dir=/var/lib/k0s/kubelet/device-plugins") || !hasHostPath(r, "/var/lib/k0s/kubelet/device-plugins") {
				t.Errorf("device-plugin directory not moved: %s", r.agentArgs())
			}
			for _, m := range r.ds.Spec.Template.Spec.Containers[0].VolumeMounts {
				if m.Name == "device-plugins" && m.MountPath != "/var/lib/k0s/kubelet/device-plugins" {
					t.Errorf("device-plugins mounted at %s", m.MountPath)
				}
			}
		}},
		{"nvidiaCDIHookPath", []string{"--set", "nvidiaCDIHookPath=/usr/local/nvidia/toolkit/nvidia-cdi-hook"}, func(t *testing.T, r rendered) {
			for _, want := range []string{"--nvidia-cdi-hook-path=/usr/local/nvidia/toolkit/nvidia-cdi-hook", "--nvidia-cdi-hook-check=/host-nvidia-cdi-hook/nvidia-cdi-hook"} {
				if !strings.Contains(r.agentArgs(), want) {
					t.Errorf("args %s lack %s", r.agentArgs(), want)
				}
			}
			if !hasHostPath(r, "/usr/local/nvidia/toolkit") {
				t.Error("the hook's directory is not mounted for the agent's check")
			}
		}},
		{"profiles", []string{"--set", "profiles={1g.10gb,3g.40gb}"}, func(t *testing.T, r rendered) {
			if !strings.Contains(r.agentArgs(), "--profiles=1g.10gb,3g.40gb") {
				t.Errorf("args %s", r.agentArgs())
			}
		}},
		{"nodeConfigs", []string{"--set", "nodeConfigs.small.warmPool=1g.10gb=2", "--set", "nodeConfigs.small.profiles={1g.10gb}", "--set", "policy=first-fit"}, func(t *testing.T, r rendered) {
			if len(r.dss) != 2 {
				t.Fatalf("%d DaemonSets, want the default and small", len(r.dss))
			}
			small := r.dss[1]
			if small.Name != "migpro-agent-small" || small.Spec.Template.Spec.NodeSelector["migpro.dev/config"] != "small" {
				t.Errorf("DaemonSet %s, nodeSelector %v", small.Name, small.Spec.Template.Spec.NodeSelector)
			}
			args := strings.Join(small.Spec.Template.Spec.Containers[0].Args, " ")
			for _, want := range []string{"--warm-pool=1g.10gb=2", "--profiles=1g.10gb", "--policy=first-fit"} {
				if !strings.Contains(args, want) {
					t.Errorf("small's args %s lack %s", args, want)
				}
			}
			if strings.Contains(r.agentArgs(), "--warm-pool") {
				t.Errorf("the default DaemonSet took small's warm pool: %s", r.agentArgs())
			}
			// The default DaemonSet leaves the labelled nodes, in every term.
			for _, term := range r.ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				if !slices.ContainsFunc(term.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
					return e.Key == "migpro.dev/config" && e.Operator == corev1.NodeSelectorOpNotIn && slices.Equal(e.Values, []string{"small"})
				}) {
					t.Errorf("default term %+v runs on nodes labelled small too", term)
				}
			}
			if r.ds.Spec.Selector.MatchLabels["migpro.dev/node-config"] == small.Spec.Selector.MatchLabels["migpro.dev/node-config"] {
				t.Error("the two DaemonSets' selectors overlap")
			}
		}},
		{"webhook placement", []string{"--set", "admission.nodeSelector.role=infra", "--set", "admission.tolerations[0].key=infra",
			"--set", "admission.tolerations[0].operator=Exists", "--set", "admission.priorityClassName=system-cluster-critical",
			"--set", "admission.resources.limits.memory=64Mi",
			"--set", "admission.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=1",
			"--set", "admission.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey=kubernetes.io/hostname"}, func(t *testing.T, r rendered) {
			s := webhook(t, r)
			if s.NodeSelector["role"] != "infra" || len(s.Tolerations) != 1 || s.PriorityClassName != "system-cluster-critical" || s.Affinity == nil || s.Affinity.PodAntiAffinity == nil {
				t.Errorf("webhook pod spec: nodeSelector %v tolerations %v priorityClassName %q affinity %+v", s.NodeSelector, s.Tolerations, s.PriorityClassName, s.Affinity)
			}
			if m := s.Containers[0].Resources.Limits.Memory().String(); m != "64Mi" {
				t.Errorf("webhook memory limit %s", m)
			}
		}},
		{"namespaceLabels", []string{"--set", "namespaceLabels.team=gpu"}, func(t *testing.T, r rendered) {
			var ns corev1.Namespace
			r.decode(t, "Namespace/migpro-system", &ns)
			if ns.Labels["team"] != "gpu" {
				t.Errorf("namespace labels %v", ns.Labels)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := renderChart(t, c.args...)
			if r.out == base {
				t.Fatalf("%v renders exactly what the defaults render", c.args)
			}
			c.check(t, r)
		})
	}
}

// TestChartNamespaceAllowsTheAgent: the namespace the chart creates carries
// the PodSecurity label the privileged agent needs, so a cluster whose
// default level is baseline or restricted still admits it.
func TestChartNamespaceAllowsTheAgent(t *testing.T) {
	var ns corev1.Namespace
	renderChart(t).decode(t, "Namespace/migpro-system", &ns)
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("namespace labels %v: the agent's privileged pod would be rejected under baseline", ns.Labels)
	}
}

// TestChartSchemaRejects: helm lint and helm template refuse unknown and
// mistyped values, and MIG strategies migpro does not offer, instead of
// ignoring them.
func TestChartSchemaRejects(t *testing.T) {
	helm := helmBinary(t)
	for _, c := range []struct{ set, want string }{
		{"imagePullSecret=regcred", "imagePullSecret"}, // misspelt: unknown
		{"admission.replica=3", "replica"},             // unknown, nested
		{"metrics.port=high", "port"},                  // mistyped
		{"log.level=verbose", "level"},                 // not one of the levels
		{"migStrategy=single", "migStrategy"},          // not offered
		{"image.tag=latest", "tag"},                    // never latest
		{"nodeConfigs.small.warmpool=1g.10gb=1", "warmpool"},
		{"idleTimeout=10 minutes", "idleTimeout"},
		{"reserveAfter=soon", "reserveAfter"},
		{"readmit.mode=kill", "mode"},
		{"dra.domain=example.com", "domain"}, // moved to resourceDomain
		{"resourceDomain=Example.com", "resourceDomain"},
	} {
		for _, verb := range []string{"lint", "template"} {
			cmd := exec.Command(helm, verb, "helm/migpro", "--set", c.set)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if err == nil || !strings.Contains(out.String(), c.want) {
				t.Errorf("helm %s --set %s: err %v, want a failure naming %q:\n%s", verb, c.set, err, c.want, out.String())
			}
		}
	}
	cmd := exec.Command(helm, "lint", "--strict", "helm/migpro")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("helm lint --strict of the defaults: %v\n%s", err, out)
	}
}

func hasHostPath(r rendered, path string) bool {
	for _, v := range r.ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil && v.HostPath.Path == path {
			return true
		}
	}
	return false
}
