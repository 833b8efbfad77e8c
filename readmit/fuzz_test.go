package readmit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/migpro/migpro/internal/quietlog"
)

// FuzzRecommendation feeds arbitrary ConfigMap data to the webhook's
// recommendation parsing (decode, chain lookup, patch building). Whatever the
// data, it must not panic, and any patch may only swap a container's MIG
// resource for a known profile and set the readmitted annotation.
func FuzzRecommendation(f *testing.F) {
	seed := func(rules ...Rule) string {
		b, _ := json.Marshal(Recommendation{Controller: testCtrl, Rules: rules})
		return string(b)
	}
	f.Add(seed(Rule{Container: "main", From: res1g, To: res2g}))
	f.Add(seed(Rule{From: res1g, To: res2g}, Rule{From: res2g, To: res3g}, Rule{From: res3g, To: res1g}))
	f.Add(seed(Rule{Container: "main", From: res1g, To: "nvidia.com/mig-x/../.."}))
	f.Add(seed(Rule{Container: "main", From: res1g, To: "nvidia.com/mig-1g.5gb~1x"}))
	f.Add(`{"controller":{"kind":"ReplicaSet","name":"train-6b7f9","uid":"rs-uid-1"},"rules":null}`)
	f.Add(`{"rules":[{"from":"","to":""}]}`)
	f.Add("{not json")
	pod := replacement(nil)
	f.Fuzz(func(t *testing.T, data string) {
		cm := planted(managedLabels)
		cm.Data[RecommendationKey] = data
		rec, err := decodeRecommendation(cm)
		if err != nil {
			return // the webhook admits unchanged, with a warning
		}
		ops, rewrites, _ := rewritePatch(pod, rec, "nvidia.com")
		if len(ops) == 0 {
			return
		}
		if _, err := json.Marshal(ops); err != nil {
			t.Fatalf("patch for %q does not encode: %v", data, err)
		}
		for _, rw := range rewrites {
			if !KnownProfileResource("nvidia.com", rw.To) {
				t.Fatalf("data %q: rewrite to %q", data, rw.To)
			}
		}
		for _, op := range ops {
			if !allowedPatchPath(op.Path) {
				t.Fatalf("data %q: patch touches %q", data, op.Path)
			}
		}
	})
}

// TestReviewOfPlantedRecommendations runs the fuzz seeds through the whole
// webhook (fake API server, AdmissionReview in and out): never a refusal,
// never a panic.
func TestReviewOfPlantedRecommendations(t *testing.T) {
	for _, data := range []string{"{not json", `{"rules":[{"from":"nvidia.com/mig-1g.5gb","to":"nvidia.com/mig-x/../.."}]}`} {
		cm := planted(managedLabels)
		cm.Data[RecommendationKey] = data
		cs, _ := newMarker(t, cm)
		w := NewWebhook(Store{Client: cs}, WithLogger(quietlog.New()))
		resp := w.Review(context.Background(), admissionRequest(t, replacement(nil)))
		if !resp.Allowed || len(resp.Patch) != 0 || strings.Contains(strings.Join(resp.Warnings, ";"), "internal error") {
			t.Fatalf("%q: %+v", data, resp)
		}
	}
}

// allowedPatchPath is what a rewrite may touch: a MIG resource of a
// container's limits or requests (a known profile when added) and the
// readmitted annotation.
func allowedPatchPath(path string) bool {
	if path == "/metadata/annotations" || path == "/metadata/annotations/"+jsonPointerEscape(AnnotationReadmitted) {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/spec/containers/")
	if !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || (parts[1] != "resources") || (parts[2] != "limits" && parts[2] != "requests") {
		return false
	}
	name := strings.ReplaceAll(strings.ReplaceAll(parts[3], "~1", "/"), "~0", "~")
	return KnownProfileResource("nvidia.com", name) || name == res1g
}
