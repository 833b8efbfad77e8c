package readmit

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/migpro/migpro/internal/quietlog"
)

// newWebhookServer serves the webhook over TLS on a fake client holding
// the recommendation main: 1g.5gb → 2g.10gb for the test ReplicaSet.
func newWebhookServer(t *testing.T, rules ...Rule) (*httptest.Server, *fake.Clientset) {
	t.Helper()
	cs, _ := newMarker(t)
	for _, r := range rules {
		if _, err := (Store{Client: cs}).Record(context.Background(), ns, testCtrl, r); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewTLSServer(must(NewWebhook(Store{Client: cs}, WithLogger(quietlog.New()))))
	t.Cleanup(srv.Close)
	return srv, cs
}

// replacement is the pod a ReplicaSet creates: generateName, no name, no uid.
func replacement(annotations map[string]string) *corev1.Pod {
	p := testPod(true)
	p.Name, p.UID, p.GenerateName, p.Spec.NodeName = "", "", rsName+"-", ""
	p.Annotations = annotations
	return p
}

// review posts an AdmissionReview for pod and returns the response and the
// pod after applying its patch.
func review(t *testing.T, srv *httptest.Server, pod *corev1.Pod, mutate func(*admissionv1.AdmissionRequest)) (*admissionv1.AdmissionResponse, *corev1.Pod) {
	t.Helper()
	req := &admissionv1.AdmissionRequest{UID: "req-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: ns,
		Operation: admissionv1.Create}
	return postReview(t, srv, "/mutate", req, pod, mutate)
}

// postReview posts an AdmissionReview of req, with obj as its object (after
// mutate, if any, changed req), to path. It checks what every answer of
// migpro's webhooks must be (a review, for the same uid, allowed, any patch
// a JSON patch) and returns the response and obj after applying its patch.
func postReview[T any](t *testing.T, srv *httptest.Server, path string, req *admissionv1.AdmissionRequest, obj *T, mutate func(*admissionv1.AdmissionRequest)) (*admissionv1.AdmissionResponse, *T) {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	req.Object = runtime.RawExtension{Raw: raw}
	if mutate != nil {
		mutate(req)
	}
	body, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	resp, err := srv.Client().Post(srv.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d", path, resp.StatusCode)
	}
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil {
		t.Fatalf("bad review %+v", out)
	}
	r := out.Response
	if r.UID != req.UID || !r.Allowed {
		t.Fatalf("response uid %q allowed %v: the webhook must always allow", r.UID, r.Allowed)
	}
	if len(r.Patch) == 0 {
		return r, obj
	}
	if r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v", r.PatchType)
	}
	patch, err := jsonpatch.DecodePatch(r.Patch)
	if err != nil {
		t.Fatalf("decode patch %s: %v", r.Patch, err)
	}
	patched, err := patch.Apply(req.Object.Raw)
	if err != nil {
		t.Fatalf("apply patch %s: %v", r.Patch, err)
	}
	got := new(T)
	if err := json.Unmarshal(patched, got); err != nil {
		t.Fatal(err)
	}
	return r, got
}

func TestWebhookRewritesTheRecommendedRequest(t *testing.T) {
	srv, _ := newWebhookServer(t, Rule{Container: "main", From: res1g, To: res2g})
	for _, ann := range []map[string]string{nil, {"keep": "me"}} {
		r, got := review(t, srv, replacement(ann), nil)
		if len(r.Patch) == 0 {
			t.Fatalf("no patch (annotations %v)", ann)
		}
		main := got.Spec.Containers[1].Resources
		for name, list := range map[string]corev1.ResourceList{"limits": main.Limits, "requests": main.Requests} {
			if q := list[res2g]; q.Cmp(resource.MustParse("1")) != 0 {
				t.Errorf("%s: %s = %v, want 1 (%v)", name, res2g, q.String(), list)
			}
			if _, still := list[res1g]; still {
				t.Errorf("%s still asks for %s", name, res1g)
			}
			if q := list[corev1.ResourceCPU]; q.String() != "1" {
				t.Errorf("%s: cpu changed to %v", name, q.String())
			}
		}
		if len(got.Spec.Containers[0].Resources.Limits) != 0 {
			t.Errorf("sidecar changed: %+v", got.Spec.Containers[0].Resources)
		}
		var rw []Rewrite
		if err := json.Unmarshal([]byte(got.Annotations[AnnotationReadmitted]), &rw); err != nil ||
			len(rw) != 1 || rw[0] != (Rewrite{Container: "main", From: res1g, To: res2g, Controller: "ReplicaSet/" + rsName}) {
			t.Errorf("annotation %q: %+v %v", got.Annotations[AnnotationReadmitted], rw, err)
		}
		if ann != nil && got.Annotations["keep"] != "me" {
			t.Error("existing annotation lost")
		}
	}
}

func TestWebhookFollowsChainsAndKeepsQuantity(t *testing.T) {
	srv, _ := newWebhookServer(t, Rule{Container: "main", From: res1g, To: res2g}, Rule{Container: "main", From: res2g, To: res3g})
	pod := replacement(nil)
	two := resource.MustParse("2")
	pod.Spec.Containers[1].Resources.Limits[res1g] = two
	delete(pod.Spec.Containers[1].Resources.Requests, res1g) // limits only
	_, got := review(t, srv, pod, nil)
	if q := got.Spec.Containers[1].Resources.Limits[res3g]; q.Cmp(two) != 0 {
		t.Fatalf("limits %v, want %s: 2", got.Spec.Containers[1].Resources.Limits, res3g)
	}
	if _, ok := got.Spec.Containers[1].Resources.Requests[res3g]; ok {
		t.Error("a request was added where there was none")
	}
}

func TestWebhookLeavesOtherPodsAlone(t *testing.T) {
	srv, cs := newWebhookServer(t, Rule{Container: "main", From: res1g, To: res2g})
	otherRS := replacement(nil)
	otherRS.OwnerReferences[0].UID = "another-rs"
	other := replacement(nil)
	other.Spec.Containers[1].Name = "renamed"
	clash := replacement(nil)
	clash.Spec.Containers[1].Resources.Limits[res2g] = resource.MustParse("1")
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		mutate  func(*admissionv1.AdmissionRequest)
		warning string
	}{
		{"bare pod", testPod(false), nil, ""},
		{"same name, other controller uid", otherRS, nil, ""},
		{"other container name", other, nil, ""},
		{"update, not create", replacement(nil), func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Update }, ""},
		{"a subresource", replacement(nil), func(r *admissionv1.AdmissionRequest) { r.SubResource = "status" }, ""},
		{"not a pod", replacement(nil), func(r *admissionv1.AdmissionRequest) { r.Kind.Kind = "ConfigMap"; r.Resource.Resource = "configmaps" }, ""},
		{"unreadable pod", replacement(nil), func(r *admissionv1.AdmissionRequest) { r.Object.Raw = []byte(`{"spec":{"containers":7}}`) }, "could not read the pod"},
		{"already asks for the target", clash, nil, "already asks for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := review(t, srv, tc.pod, tc.mutate)
			if len(r.Patch) != 0 {
				t.Errorf("patched: %s", r.Patch)
			}
			if got := strings.Join(r.Warnings, ";"); !strings.Contains(got, tc.warning) || (tc.warning == "" && got != "") {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
		})
	}
	// A lookup failure admits the pod unchanged, with a warning.
	cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, context.DeadlineExceeded
	})
	r, _ := review(t, srv, replacement(nil), nil)
	if len(r.Patch) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "unreadable") {
		t.Errorf("lookup failure: patch %s warnings %q", r.Patch, r.Warnings)
	}
}

func TestWebhookRejectsWhatIsNotAReview(t *testing.T) {
	srv, _ := newWebhookServer(t)
	for _, tc := range []struct {
		method, body string
		want         int
	}{
		{http.MethodGet, "", http.StatusMethodNotAllowed},
		{http.MethodPost, "{", http.StatusBadRequest},
		{http.MethodPost, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest},
		{http.MethodPost, strings.Repeat(" ", maxReviewBytes+1), http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+"/mutate", strings.NewReader(tc.body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %.20q: status %d, want %d", tc.method, tc.body, resp.StatusCode, tc.want)
		}
	}
}

func TestReviewSurvivesAPanickingStore(t *testing.T) {
	w := must(NewWebhook(panicky{}, WithLogger(quietlog.New())))
	raw, _ := json.Marshal(replacement(nil))
	resp := w.Review(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Resource: "pods"}, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}})
	if !resp.Allowed || resp.UID != "u" || len(resp.Patch) != 0 || len(resp.Warnings) != 1 {
		t.Fatalf("%+v", resp)
	}
}

type panicky struct{}

func (panicky) Get(context.Context, string, Controller) (*Recommendation, error) { panic("boom") }
