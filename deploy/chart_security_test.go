package deploy

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestChartWebhookClientCA: admission.clientCASecret gives migpro-admission
// --client-ca from that Secret's ca.crt, so only the API server (with a
// client certificate of that CA) gets the webhook's answers; by default the
// flag is absent (docs/security.md, issue 33 low 6).
func TestChartWebhookClientCA(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		secret string
	}{{nil, ""}, {[]string{"--set", "admission.clientCASecret=apiserver-webhook-ca"}, "apiserver-webhook-ca"}} {
		r := renderChart(t, tc.args...)
		var d appsv1.Deployment
		r.decode(t, "Deployment/migpro-admission", &d)
		pod := d.Spec.Template.Spec
		args := strings.Join(pod.Containers[0].Args, " ")
		var secret string
		for _, v := range pod.Volumes {
			if v.Name == "callers" && v.Secret != nil {
				secret = v.Secret.SecretName
			}
		}
		hasFlag := strings.Contains(args, "--client-ca=/etc/migpro-admission-callers/ca.crt")
		if hasFlag != (tc.secret != "") || secret != tc.secret {
			t.Errorf("values %v: args %q, callers Secret %q; want the flag and the Secret %q", tc.args, args, secret, tc.secret)
		}
		mounted := false
		for _, m := range pod.Containers[0].VolumeMounts {
			mounted = mounted || m.Name == "callers" && m.MountPath == "/etc/migpro-admission-callers"
		}
		if mounted != (tc.secret != "") {
			t.Errorf("values %v: callers mounted %v", tc.args, mounted)
		}
	}
}
