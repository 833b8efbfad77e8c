package deploy

import (
	"strings"
	"testing"

	admregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// TestChartResourceDomain: one value, resourceDomain, names the domain of
// every MIG resource name the chart's parts serve or read, so they cannot
// disagree: the agent's --domain (every DaemonSet), the webhook's --domain
// and the match condition that decides which pods call it, the agent
// policy's rule for pending pods, and the DRA DeviceClasses'
// extendedResourceName. The default stays nvidia.com.
func TestChartResourceDomain(t *testing.T) {
	for _, c := range []struct {
		name, domain string
		set          []string
	}{
		{"default", "nvidia.com", nil},
		{"own domain", "gpus.example.com", []string{"--set", "resourceDomain=gpus.example.com"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--set", "dra.enabled=true", "--set", "dra.profiles={1g.5gb}",
				"--set", "nodeConfigs.small.profiles={1g.10gb}"}, c.set...)
			r := renderChart(t, args...)
			prefix := c.domain + "/mig-"

			if len(r.dss) < 2 {
				t.Fatalf("want the default DaemonSet and one per node configuration, got %d", len(r.dss))
			}
			for _, ds := range r.dss {
				if a := strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(a, "--domain="+c.domain+" ") {
					t.Errorf("DaemonSet %s args %q lack --domain=%s", ds.Name, a, c.domain)
				}
			}
			var hook appsv1.Deployment
			r.decode(t, "Deployment/migpro-admission", &hook)
			if a := strings.Join(hook.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(a, "--domain="+c.domain+" ") {
				t.Errorf("webhook args %q lack --domain=%s", a, c.domain)
			}
			var mut admregv1.MutatingWebhookConfiguration
			r.decode(t, "MutatingWebhookConfiguration/migpro-readmit", &mut)
			if len(mut.Webhooks) != 1 || len(mut.Webhooks[0].MatchConditions) == 0 ||
				!strings.Contains(mut.Webhooks[0].MatchConditions[0].Expression, "'"+prefix+"'") {
				t.Errorf("readmit webhook's match conditions do not ask for %s: %+v", prefix, mut.Webhooks)
			}
			var pol admregv1.ValidatingAdmissionPolicy
			r.decode(t, "ValidatingAdmissionPolicy/migpro-agent-pods", &pol)
			found := false
			for _, v := range pol.Spec.Validations {
				found = found || strings.Contains(v.Expression, "'"+prefix+"'")
			}
			if !found {
				t.Errorf("agent pod policy never reads %s", prefix)
			}
			var dc resourceapi.DeviceClass
			r.decode(t, "DeviceClass/1g.5gb.mig.migpro.dev", &dc)
			if dc.Spec.ExtendedResourceName == nil || *dc.Spec.ExtendedResourceName != prefix+"1g.5gb" {
				t.Errorf("DeviceClass extendedResourceName %v, want %s1g.5gb", dc.Spec.ExtendedResourceName, prefix)
			}
			if c.domain != "nvidia.com" {
				for key, doc := range r.docs {
					if strings.Contains(string(doc), "'nvidia.com/mig-") || strings.Contains(string(doc), "=nvidia.com") ||
						strings.Contains(string(doc), ": nvidia.com/mig-") {
						t.Errorf("%s still names nvidia.com with resourceDomain=%s", key, c.domain)
					}
				}
			}
		})
	}
}
