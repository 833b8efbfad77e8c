package deploy

import (
	"bytes"
	"strings"
	"testing"

	admregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestChartDRAReadmit: with dra.enabled the chart registers the claim
// webhook (/mutate-claim) for ResourceClaim CREATE, signed by the same CA as
// the pod webhook, failing open; without DRA, or without the admission
// webhook, it registers none.
func TestChartDRAReadmit(t *testing.T) {
	const key = "MutatingWebhookConfiguration/migpro-readmit-claims"
	for _, set := range [][]string{nil, {"--set", "dra.enabled=true", "--set", "admission.enabled=false"}} {
		if _, ok := renderChart(t, set...).docs[key]; ok {
			t.Errorf("values %v render %s", set, key)
		}
	}
	r := renderChart(t, "--set", "dra.enabled=true")
	var mwc admregv1.MutatingWebhookConfiguration
	r.decode(t, key, &mwc)
	if len(mwc.Webhooks) != 1 {
		t.Fatalf("webhooks %+v", mwc.Webhooks)
	}
	w := mwc.Webhooks[0]
	svc := w.ClientConfig.Service
	if svc == nil || svc.Name != "migpro-admission" || svc.Path == nil || *svc.Path != "/mutate-claim" {
		t.Errorf("clientConfig %+v", w.ClientConfig)
	}
	if len(w.Rules) != 1 || strings.Join(w.Rules[0].APIGroups, ",") != "resource.k8s.io" || strings.Join(w.Rules[0].Resources, ",") != "resourceclaims" ||
		len(w.Rules[0].Operations) != 1 || w.Rules[0].Operations[0] != admregv1.Create {
		t.Errorf("rules %+v", w.Rules)
	}
	if w.FailurePolicy == nil || *w.FailurePolicy != admregv1.Ignore || len(w.MatchConditions) != 1 ||
		!strings.Contains(w.MatchConditions[0].Expression, "resource.kubernetes.io/pod-claim-name") {
		t.Errorf("failurePolicy %v matchConditions %+v", w.FailurePolicy, w.MatchConditions)
	}
	var sec corev1.Secret
	r.decode(t, "Secret/migpro-admission-tls", &sec)
	if !bytes.Equal(w.ClientConfig.CABundle, sec.Data["ca.crt"]) || len(sec.Data["ca.crt"]) == 0 {
		t.Error("the claim webhook's caBundle is not the generated CA")
	}
	cm := renderChart(t, "--set", "dra.enabled=true", "--api-versions", "cert-manager.io/v1")
	if !strings.Contains(string(cm.docs[key]), "cert-manager.io/inject-ca-from: migpro-system/migpro-admission") {
		t.Errorf("with cert-manager %s lacks the inject-ca-from annotation", key)
	}
}
