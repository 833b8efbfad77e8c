package readmit

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/dra"
	"github.com/migpro/migpro/internal/quietlog"
)

// claimPodObj is the ReplicaSet's pod whose container main uses the pod
// claim "gpu" (from a template) and whose sidecar uses nothing.
func claimPodObj() *corev1.Pod {
	p := testPod(true)
	p.Spec.Containers[1].Resources = corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}
	tmpl := "mig-1g-5gb"
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
	return p
}

// templateClaim is the claim the resourceclaim controller makes from the
// pod's template for its claim "gpu", with the requests given.
func templateClaim(pod *corev1.Pod, reqs ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	yes := true
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + "-gpu-", Namespace: ns,
			Annotations:     map[string]string{AnnotationPodClaimName: "gpu"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}},
	}
}

func classRequest(name, class string, cel ...string) resourceapi.DeviceRequest {
	e := &resourceapi.ExactDeviceRequest{DeviceClassName: class}
	for _, x := range cel {
		e.Selectors = append(e.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: x}})
	}
	return resourceapi.DeviceRequest{Name: name, Exactly: e}
}

// newClaimServer serves the claim webhook over TLS on a fake client holding
// pod and the ReplicaSet's recommendation rules.
func newClaimServer(t *testing.T, pod *corev1.Pod, rules ...Rule) *httptest.Server {
	t.Helper()
	cs, _ := newMarker(t, pod)
	for _, r := range rules {
		if _, err := (Store{Client: cs}).Record(context.Background(), ns, testCtrl, r); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewTLSServer(must(NewClaimWebhook(Store{Client: cs}, "", WithLogger(quietlog.New()))))
	t.Cleanup(srv.Close)
	return srv
}

// reviewClaim posts an AdmissionReview for claim to /mutate-claim and
// returns the response and the claim after its patch.
func reviewClaim(t *testing.T, srv *httptest.Server, claim *resourceapi.ResourceClaim) (*admissionv1.AdmissionResponse, *resourceapi.ResourceClaim) {
	t.Helper()
	req := &admissionv1.AdmissionRequest{UID: "req-c", Kind: metav1.GroupVersionKind{Group: "resource.k8s.io", Version: "v1", Kind: "ResourceClaim"},
		Resource: metav1.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"}, Namespace: ns,
		Operation: admissionv1.Create}
	return postReview(t, srv, "/mutate-claim", req, claim, nil)
}

func selectors(e *resourceapi.ExactDeviceRequest) []string {
	var out []string
	for _, s := range e.Selectors {
		out = append(out, s.CEL.Expression)
	}
	return out
}

func TestClaimDriverNameIsTheDriversName(t *testing.T) {
	if DRADriver != dra.DriverName {
		t.Fatalf("readmit.DRADriver %q, dra.DriverName %q", DRADriver, dra.DriverName)
	}
}

// Each way a claim names a profile is moved to the recommended one: the
// per-profile class, the profile selector on the base class (other
// selectors kept), a claim by memory (the rule's chain), and the matching
// firstAvailable subrequest.
func TestClaimWebhookMovesTheRequest(t *testing.T) {
	pod := claimPodObj()
	const model = `device.attributes["migpro.dev"].model == "NVIDIA A100-SXM4-40GB"`
	const mem = `device.capacity["migpro.dev"].memory.compareTo(quantity("4Gi")) >= 0`
	want2g := profileExpression("2g.10gb")
	for _, tc := range []struct {
		name    string
		req     resourceapi.DeviceRequest
		want    []string // selectors of the (first) exact request after the move
		wantSub []string // class of each firstAvailable subrequest after
	}{
		{"per-profile class", classRequest("mig", "1g.5gb.mig.migpro.dev"), []string{want2g}, nil},
		{"profile selector", classRequest("mig", DefaultDeviceClass, model, profileExpression("1g.5gb")), []string{model, want2g}, nil},
		{"by memory", classRequest("mig", DefaultDeviceClass, mem), []string{mem, want2g}, nil},
		{"firstAvailable", resourceapi.DeviceRequest{Name: "mig", FirstAvailable: []resourceapi.DeviceSubRequest{
			{Name: "small", DeviceClassName: "1g.5gb.mig.migpro.dev"}, {Name: "large", DeviceClassName: "3g.20gb.mig.migpro.dev"}}},
			nil, []string{DefaultDeviceClass, "3g.20gb.mig.migpro.dev"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newClaimServer(t, pod, Rule{Container: "main", From: res1g, To: res2g})
			r, got := reviewClaim(t, srv, templateClaim(pod, tc.req))
			if len(r.Patch) == 0 {
				t.Fatalf("no patch; warnings %v", r.Warnings)
			}
			req := got.Spec.Devices.Requests[0]
			if tc.want != nil {
				if req.Exactly.DeviceClassName != DefaultDeviceClass || strings.Join(selectors(req.Exactly), "|") != strings.Join(tc.want, "|") {
					t.Errorf("request after: class %s selectors %q, want %s %q", req.Exactly.DeviceClassName, selectors(req.Exactly), DefaultDeviceClass, tc.want)
				}
			} else {
				var classes []string
				for _, s := range req.FirstAvailable {
					classes = append(classes, s.DeviceClassName)
				}
				if strings.Join(classes, "|") != strings.Join(tc.wantSub, "|") || len(req.FirstAvailable[0].Selectors) != 1 ||
					req.FirstAvailable[0].Selectors[0].CEL.Expression != want2g || req.FirstAvailable[0].Name != "small" {
					t.Errorf("subrequests after %+v, want classes %v and small on 2g.10gb", req.FirstAvailable, tc.wantSub)
				}
			}
			var rws []ClaimRewrite
			if err := json.Unmarshal([]byte(got.Annotations[AnnotationReadmitted]), &rws); err != nil || len(rws) != 1 ||
				rws[0].From != res1g || rws[0].To != res2g || rws[0].Containers[0] != "main" || !strings.Contains(rws[0].Controller, rsName) {
				t.Errorf("annotation %q: %+v %v", got.Annotations[AnnotationReadmitted], rws, err)
			}
		})
	}
}

// Rules chain (1g.5gb → 2g.10gb → 3g.20gb) as for pods, and a variant
// profile's "+" survives the resource name's ".".
func TestClaimWebhookFollowsChainsAndVariants(t *testing.T) {
	pod := claimPodObj()
	srv := newClaimServer(t, pod, Rule{Container: "main", From: res1g, To: res2g}, Rule{Container: "main", From: res2g, To: res3g})
	_, got := reviewClaim(t, srv, templateClaim(pod, classRequest("mig", "1g.5gb.mig.migpro.dev")))
	if s := selectors(got.Spec.Devices.Requests[0].Exactly); len(s) != 1 || s[0] != profileExpression("3g.20gb") {
		t.Errorf("chained: selectors %q, want 3g.20gb", s)
	}
	me := "nvidia.com/mig-1g.10gb.me"
	srv = newClaimServer(t, pod, Rule{Container: "main", From: me, To: res3g})
	_, got = reviewClaim(t, srv, templateClaim(pod, classRequest("mig", "1g.10gb-me.mig.migpro.dev")))
	if s := selectors(got.Spec.Devices.Requests[0].Exactly); len(s) != 1 || s[0] != profileExpression("3g.20gb") {
		t.Errorf("variant class: selectors %q, want 3g.20gb", s)
	}
	if p := profileOfResource("nvidia.com", me); p != "1g.10gb+me" {
		t.Errorf("profileOfResource(%s) = %q", me, p)
	}
}

// What the webhook leaves alone: no recommendation, a rule for another
// container or another profile, a request no container uses, a claim not
// made from a pod's template, an opted-out pod, a pod gone or replaced, an
// UPDATE. Each is admitted unchanged.
func TestClaimWebhookLeavesOthersAlone(t *testing.T) {
	rule := Rule{Container: "main", From: res1g, To: res2g}
	req := classRequest("mig", "1g.5gb.mig.migpro.dev")
	pod := claimPodObj()
	optedOut := claimPodObj()
	optedOut.Labels = map[string]string{LabelReadmit: ReadmitDisabled}
	bare := claimPodObj()
	bare.OwnerReferences = nil
	onlyOther := claimPodObj()
	onlyOther.Spec.Containers[1].Resources.Claims[0].Request = "other"
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		rules []Rule
		claim func() *resourceapi.ResourceClaim
	}{
		{"no recommendation", pod, nil, func() *resourceapi.ResourceClaim { return templateClaim(pod, req) }},
		{"rule for another container", pod, []Rule{{Container: "sidecar", From: res1g, To: res2g}}, func() *resourceapi.ResourceClaim { return templateClaim(pod, req) }},
		{"rule for another profile", pod, []Rule{{Container: "main", From: res2g, To: res3g}}, func() *resourceapi.ResourceClaim { return templateClaim(pod, req) }},
		{"request no container uses", onlyOther, []Rule{rule}, func() *resourceapi.ResourceClaim { return templateClaim(onlyOther, req) }},
		{"not from a template", pod, []Rule{rule}, func() *resourceapi.ResourceClaim {
			c := templateClaim(pod, req)
			c.Annotations = nil
			return c
		}},
		{"owner not a pod", pod, []Rule{rule}, func() *resourceapi.ResourceClaim {
			c := templateClaim(pod, req)
			c.OwnerReferences[0].Kind = "ReplicaSet"
			return c
		}},
		{"pod replaced", pod, []Rule{rule}, func() *resourceapi.ResourceClaim {
			c := templateClaim(pod, req)
			c.OwnerReferences[0].UID = "someone-else"
			return c
		}},
		{"opted out", optedOut, []Rule{rule}, func() *resourceapi.ResourceClaim { return templateClaim(optedOut, req) }},
		{"bare pod", bare, []Rule{rule}, func() *resourceapi.ResourceClaim { return templateClaim(bare, req) }},
		{"other class", pod, []Rule{rule}, func() *resourceapi.ResourceClaim {
			return templateClaim(pod, classRequest("mig", "gpu.nvidia.com", profileExpression("1g.5gb")))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newClaimServer(t, tc.pod, tc.rules...)
			if r, _ := reviewClaim(t, srv, tc.claim()); len(r.Patch) != 0 {
				t.Errorf("patched: %s", r.Patch)
			}
		})
	}
}

// An advised rule (advise mode) is not applied, as for pods; an unknown
// target is refused with a warning; a claim by memory with two chains
// cannot tell which applies and is left alone.
func TestClaimWebhookRefusesWhatItCannotApply(t *testing.T) {
	pod := claimPodObj()
	srv := newClaimServer(t, pod, Rule{Container: "main", From: res1g, To: res2g, Advised: true})
	if r, _ := reviewClaim(t, srv, templateClaim(pod, classRequest("mig", "1g.5gb.mig.migpro.dev"))); len(r.Patch) != 0 {
		t.Errorf("advised rule applied: %s", r.Patch)
	}
	srv = newClaimServer(t, pod, Rule{Container: "main", From: res1g, To: "nvidia.com/mig-9g.99gb\"||true"})
	r, _ := reviewClaim(t, srv, templateClaim(pod, classRequest("mig", "1g.5gb.mig.migpro.dev")))
	if len(r.Patch) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "not a known") {
		t.Errorf("unknown target: patch %s warnings %v", r.Patch, r.Warnings)
	}
	srv = newClaimServer(t, pod, Rule{Container: "main", From: res1g, To: res2g}, Rule{Container: "main", From: "nvidia.com/mig-1g.10gb", To: res3g})
	mem := `device.capacity["migpro.dev"].memory.compareTo(quantity("4Gi")) >= 0`
	if r, _ := reviewClaim(t, srv, templateClaim(pod, classRequest("mig", DefaultDeviceClass, mem))); len(r.Patch) != 0 {
		t.Errorf("ambiguous memory claim patched: %s", r.Patch)
	}
}

// A request used through "<request>/<subrequest>" or by the whole claim
// counts; an init container counts.
func TestClaimUsers(t *testing.T) {
	p := claimPodObj()
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu", Request: "b/small"}}}}}
	spec := &resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "a"}, {Name: "b"}}}
	got := claimUsers(p, "gpu", spec)
	if strings.Join(got["a"], ",") != "main" || strings.Join(got["b"], ",") != "init,main" {
		t.Errorf("users %v", got)
	}
	if got := claimUsers(p, "other", spec); len(got) != 0 {
		t.Errorf("users of another claim %v", got)
	}
}

// The Marker finds a claim container's profile from its instance: the mark
// of a container with no MIG resource but a claim stores 1g.5gb → 2g.10gb
// and evicts.
func TestMarkerTakesAClaimContainersProfileFromItsInstance(t *testing.T) {
	cs, m := newMarker(t, claimPodObj())
	out, err := m.Handle(context.Background(), testMark())
	if err != nil || !out.Evicted || out.From != res1g || out.To != res2g {
		t.Fatalf("Handle: %+v %v", out, err)
	}
	if to, ok := storedRecommendation(t, cs).Target("main", res1g); !ok || to != res2g {
		t.Errorf("recommendation: %s %v", to, ok)
	}
	// Without the instance's profile there is nothing to move from.
	cs, m = newMarker(t, claimPodObj())
	mk := testMark()
	mk.InstanceProfile = ""
	if out, err := m.Handle(context.Background(), mk); err != nil || out.Evicted || out.Ignored == "" {
		t.Fatalf("mark without a profile: %+v %v", out, err)
	}
	if count(cs, "create", "pods", "eviction") != 0 {
		t.Error("evicted without knowing the profile")
	}
}

// A container on a ResourceClaim the pod names directly is not evicted: its
// replacement would reuse that claim on the same device. The
// recommendation is still stored, and an Event says why.
func TestMarkerKeepsAPodOnAFixedClaim(t *testing.T) {
	pod := claimPodObj()
	shared := "team-gpu"
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &shared}}
	cs, m := newMarker(t, pod)
	out, err := m.Handle(context.Background(), testMark())
	if err != nil || out.Evicted || !strings.Contains(out.Ignored, "ResourceClaim team-gpu") {
		t.Fatalf("Handle: %+v %v", out, err)
	}
	if count(cs, "create", "pods", "eviction") != 0 {
		t.Error("evicted a pod whose claim would come back as it is")
	}
	if e := events(t, cs)[ReasonNotEvicted]; !strings.Contains(e.Message, "ResourceClaimTemplate") {
		t.Errorf("%s event %q", ReasonNotEvicted, e.Message)
	}
	if to, ok := storedRecommendation(t, cs).Target("main", res1g); !ok || to != res2g {
		t.Errorf("recommendation not stored: %s %v", to, ok)
	}
}
