package deploy

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestChartNodeView: with admission on (the default) the agent reads
// through migpro-admission's node view: its ClusterRoles grant no read of
// pods, ReplicaSets, Jobs or Namespaces, its DaemonSet runs with
// --node-view and a token of audience migpro-node-view, and the admission
// role may review tokens and list and watch pods, and remembers a review for
// admission.nodeView.reviewTTL. With admission off, or
// cert-manager and no CA ConfigMap, the agent keeps today's reads (issue 33
// medium 6).
func TestChartNodeView(t *testing.T) {
	agentReads := func(r rendered) []string {
		var out []string
		for _, name := range []string{"migpro-agent", "migpro-agent-readmit"} {
			var role rbacv1.ClusterRole
			r.decode(t, "ClusterRole/"+name, &role)
			for _, rule := range role.Rules {
				for _, res := range rule.Resources {
					if !slices.Contains([]string{"pods", "replicasets", "jobs", "namespaces"}, res) {
						continue
					}
					for _, v := range rule.Verbs {
						if v == "get" || v == "list" || v == "watch" {
							out = append(out, res+":"+v)
						}
					}
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		args []string
		view bool
	}{
		{"defaults", nil, true},
		{"mode labels", []string{"--set", "readmit.modeLabels=true"}, true},
		{"view off", []string{"--set", "admission.nodeView.enabled=false"}, false},
		{"admission off", []string{"--set", "admission.enabled=false"}, false},
		{"cert-manager without a CA ConfigMap", []string{"--api-versions", "cert-manager.io/v1"}, false},
		{"cert-manager with a CA ConfigMap", []string{"--api-versions", "cert-manager.io/v1", "--set", "admission.nodeView.caConfigMap=my-ca"}, true},
		{"review every read", []string{"--set", "admission.nodeView.reviewTTL=0s"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderChart(t, tc.args...)
			reads, args := agentReads(r), r.agentArgs()
			hasFlag := strings.Contains(args, "--node-view=https://migpro-admission.migpro-system.svc:443")
			if tc.view {
				if len(reads) > 0 || !hasFlag {
					t.Errorf("view on: agent reads %v, args %q; want no reads and --node-view", reads, args)
				}
				var tokenAudience string
				for _, v := range r.ds.Spec.Template.Spec.Volumes {
					if v.Name == "node-view" && v.Projected != nil {
						for _, s := range v.Projected.Sources {
							if s.ServiceAccountToken != nil {
								tokenAudience = s.ServiceAccountToken.Audience
							}
						}
					}
				}
				if tokenAudience != "migpro-node-view" {
					t.Errorf("view on: node-view token audience %q", tokenAudience)
				}
				var role rbacv1.ClusterRole
				r.decode(t, "ClusterRole/migpro-admission", &role)
				var grants []string
				for _, rule := range role.Rules {
					for _, res := range rule.Resources {
						for _, v := range rule.Verbs {
							grants = append(grants, res+":"+v)
						}
					}
				}
				for _, want := range []string{"tokenreviews:create", "pods:list", "pods:watch", "jobs:get", "namespaces:get"} {
					if !slices.Contains(grants, want) {
						t.Errorf("view on: the admission role lacks %s (has %v)", want, grants)
					}
				}
				ttl := "10s"
				if i := slices.Index(tc.args, "admission.nodeView.reviewTTL=0s"); i >= 0 {
					ttl = "0s"
				}
				var dep appsv1.Deployment
				r.decode(t, "Deployment/migpro-admission", &dep)
				if got := dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(got, "--view-review-ttl="+ttl) {
					t.Errorf("view on: admission args %q, want --view-review-ttl=%s", got, ttl)
				}
				return
			}
			if hasFlag || !slices.Contains(reads, "pods:list") || !slices.Contains(reads, "pods:watch") {
				t.Errorf("view off: agent reads %v, args %q; want today's pod reads and no --node-view", reads, args)
			}
		})
	}
}
