package readmit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/migpro/migpro/internal/quietlog"
)

// planted is a ConfigMap someone other than migpro wrote: the right name and
// controller uid, with whatever labels and rules the writer chose.
func planted(labels map[string]string, rules ...Rule) *corev1.ConfigMap {
	b, _ := json.Marshal(Recommendation{Controller: testCtrl, Rules: rules})
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: StoreName(testCtrl.Kind, testCtrl.Name), Namespace: ns, Labels: labels},
		Data:       map[string]string{RecommendationKey: string(b)},
	}
}

var managedLabels = map[string]string{LabelRecommendation: "true", LabelManagedBy: ManagedBy}

// A ConfigMap without migpro's managed-by label is not a recommendation,
// whatever its name and content: anyone who can create ConfigMaps in the
// namespace could otherwise choose what the pod's containers get.
func TestWebhookTrustsOnlyManagedConfigMaps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"no labels", nil, false},
		{"recommendation label only", map[string]string{LabelRecommendation: "true"}, false},
		{"managed by someone else", map[string]string{LabelRecommendation: "true", LabelManagedBy: "helm"}, false},
		{"managed by migpro", managedLabels, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := newMarker(t, planted(tc.labels, Rule{Container: "main", From: res1g, To: res2g}))
			w := NewWebhook(Store{Client: cs}, WithLogger(quietlog.New()))
			resp := w.Review(context.Background(), admissionRequest(t, replacement(nil)))
			if got := len(resp.Patch) > 0; got != tc.want {
				t.Fatalf("patched %v (%s), want %v", got, resp.Patch, tc.want)
			}
		})
	}
}

// The target must be a MIG profile, not any string under the MIG prefix: a
// To of "nvidia.com/mig-x/../.." went into the patch's path unvalidated.
func TestWebhookAcceptsOnlyKnownProfilesAsTarget(t *testing.T) {
	for _, to := range []string{
		"nvidia.com/mig-x/../..",
		"nvidia.com/mig-../../metadata",
		"nvidia.com/mig-1g.5gb/../../../spec",
		"nvidia.com/mig-1g.5gb~1x",
		"nvidia.com/mig-1g.5gb\n",
		"nvidia.com/mig-x",
		"nvidia.com/mig-99g.5gb",
		"nvidia.com/gpu",
		"example.org/mig-2g.10gb",
	} {
		t.Run(to, func(t *testing.T) {
			cs, _ := newMarker(t, planted(managedLabels, Rule{Container: "main", From: res1g, To: to}))
			w := NewWebhook(Store{Client: cs}, WithLogger(quietlog.New()))
			resp := w.Review(context.Background(), admissionRequest(t, replacement(nil)))
			if len(resp.Patch) != 0 {
				t.Fatalf("patched with target %q: %s", to, resp.Patch)
			}
			if !strings.Contains(strings.Join(resp.Warnings, ";"), "not a known") {
				t.Errorf("warnings %q, want one naming the refused target", resp.Warnings)
			}
		})
	}
	for _, to := range []string{"nvidia.com/mig-2g.10gb", "nvidia.com/mig-1g.10gb.me", "nvidia.com/mig-7g.141gb", "nvidia.com/mig-1g.5gb.me.all"} {
		if !KnownProfileResource("nvidia.com", to) {
			t.Errorf("%q refused", to)
		}
	}
}

// admissionRequest is the CREATE request for pod.
func admissionRequest(t *testing.T, pod *corev1.Pod) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: ns,
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}
}
