package readmit

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/migpro/migpro/internal/quietlog"
)

// postEviction posts the AdmissionReview the API server sends for an
// eviction (evictionRequestUID) to the guard.
func postEviction(t *testing.T, srv *httptest.Server, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	body, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	resp, err := srv.Client().Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil || out.Response.UID != req.UID {
		t.Fatalf("review %+v %v", out, err)
	}
	return out.Response
}

// evictionRequestUID is the admission request of an eviction of team/<pod>
// by user, with the node-name extra when node is set, and uid as the
// precondition (none when uid is empty).
func evictionRequestUID(user, node, pod string, uid types.UID) *admissionv1.AdmissionRequest {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}}
	if uid != "" {
		ev.DeleteOptions = &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	}
	raw, _ := json.Marshal(ev)
	ui := authnv1.UserInfo{Username: user}
	if node != "" {
		ui.Extra = map[string]authnv1.ExtraValue{NodeNameExtra: {node}}
	}
	return &admissionv1.AdmissionRequest{UID: "ev-1", Kind: metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "eviction",
		Name: pod, Namespace: ns, Operation: admissionv1.Create, UserInfo: ui, Object: runtime.RawExtension{Raw: raw}}
}

func TestEvictionGuardKeepsTheAgentOnItsNode(t *testing.T) {
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)}, Spec: corev1.PodSpec{NodeName: node}}
	}
	cs := fake.NewClientset(pod("mine", "gpu-a"), pod("theirs", "gpu-b"), pod("pending", ""), pod("broken", "gpu-a"))
	cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() == "broken" {
			return true, nil, errors.New("etcd unavailable")
		}
		return false, nil, nil
	})
	srv := httptest.NewTLSServer(NewEvictionGuard(cs.CoreV1(), WithLogger(quietlog.New())))
	t.Cleanup(srv.Close)

	for _, c := range []struct {
		what, user, node, pod string
		allowed               bool
		msg                   string
		uid                   types.UID // the precondition; default uid-<pod>
	}{
		{"its own node's pod without a UID precondition", DefaultAgentUser, "gpu-a", "mine", false, "must carry the pod's UID as a precondition", "none"},
		{"its own node's pod with another pod's UID", DefaultAgentUser, "gpu-a", "mine", false, "must carry the pod's UID as a precondition", "uid-theirs"},
		{"its own node's pod", DefaultAgentUser, "gpu-a", "mine", true, "", ""},
		{"another node's pod", DefaultAgentUser, "gpu-a", "theirs", false, "the migpro agent of node gpu-a may evict only pods on its own node; pod team/theirs is not on it", ""},
		{"an unscheduled pod", DefaultAgentUser, "gpu-a", "pending", false, "pod team/pending is not on it", ""},
		{"a token bound to no node", DefaultAgentUser, "", "mine", false, "its token names no node", ""},
		{"a pod it cannot read", DefaultAgentUser, "gpu-a", "broken", false, "cannot read pod team/broken", ""},
		{"a pod that does not exist (answered as a pod elsewhere)", DefaultAgentUser, "gpu-a", "gone", false, "pod team/gone is not on it", ""},
		{"another node's pod without a UID precondition (no UID in the answer)", DefaultAgentUser, "gpu-a", "theirs", false, "pod team/theirs is not on it", "none"},
		{"another user", "system:serviceaccount:kube-system:admin", "", "theirs", true, "", ""},
	} {
		uid := c.uid
		switch uid {
		case "":
			uid = types.UID("uid-" + c.pod)
		case "none":
			uid = ""
		}
		r := postEviction(t, srv, evictionRequestUID(c.user, c.node, c.pod, uid))
		if r.Allowed != c.allowed {
			t.Errorf("%s: allowed %v, want %v (%+v)", c.what, r.Allowed, c.allowed, r.Result)
			continue
		}
		if !c.allowed && (r.Result == nil || r.Result.Code != http.StatusForbidden || !strings.Contains(r.Result.Message, c.msg)) {
			t.Errorf("%s: result %+v, want 403 saying %q", c.what, r.Result, c.msg)
		}
		// Anyone can post a review: no answer names a pod's UID or node.
		if r.Result != nil && (strings.Contains(r.Result.Message, "uid-") || strings.Contains(r.Result.Message, "gpu-b")) {
			t.Errorf("%s: the answer tells a pod's UID or node: %q", c.what, r.Result.Message)
		}
	}
}
