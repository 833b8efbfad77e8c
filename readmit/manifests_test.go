package readmit

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	admregv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/migpro/migpro/internal/quietlog"
)

// manifestObjects decodes every document of a manifest.
func manifestObjects(t *testing.T, path string) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []runtime.Object
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, obj)
	}
	return out
}

func clusterRole(t *testing.T, path, name string) *rbacv1.ClusterRole {
	t.Helper()
	for _, o := range manifestObjects(t, path) {
		if r, ok := o.(*rbacv1.ClusterRole); ok && r.Name == name {
			return r
		}
	}
	t.Fatalf("%s: no ClusterRole %s", path, name)
	return nil
}

// allows reports whether a rule of group grants verb on resource[/sub].
func allows(role *rbacv1.ClusterRole, group, verb, res, sub string) bool {
	full := res
	if sub != "" {
		full += "/" + sub
	}
	for _, r := range role.Rules {
		if contains(r.APIGroups, group) && contains(r.Resources, full) && (contains(r.Verbs, verb) || contains(r.Verbs, "*")) {
			return true
		}
	}
	return false
}

// checkActions fails for every API call the role does not allow.
func checkActions(t *testing.T, role *rbacv1.ClusterRole, cs *fake.Clientset) {
	t.Helper()
	if len(cs.Actions()) == 0 {
		t.Fatal("no API calls recorded")
	}
	for _, a := range cs.Actions() {
		if !allows(role, a.GetResource().Group, a.GetVerb(), a.GetResource().Resource, a.GetSubresource()) {
			t.Errorf("%s does not allow %s %s/%s", role.Name, a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
		}
	}
}

// checkViewReads fails for every call made to the node view that it does not
// serve: it answers reads only (nodeview.Server).
func checkViewReads(t *testing.T, view *fake.Clientset) {
	t.Helper()
	for _, a := range view.Actions() {
		if v := a.GetVerb(); (v != "get" && v != "list" && v != "watch") || a.GetSubresource() != "" {
			t.Errorf("the node view got %s %s/%s; it serves reads only", v, a.GetResource().Resource, a.GetSubresource())
		}
	}
}

// The Marker's every API call on its busiest paths (record, evict after a
// refusal, bump a repeated event) is allowed by rbac-readmit.yaml.
func TestAgentRBACCoversTheMarker(t *testing.T) {
	role := clusterRole(t, "../deploy/kubernetes/rbac-readmit.yaml", "migpro-agent-readmit")
	cs, view, _, m := newAgentMarker(t, testPod(true))
	refused := false
	cs.PrependReactor("create", "pods", refuseOnce(&refused))
	if _, err := m.Handle(context.Background(), testMark()); err != nil {
		t.Fatal(err)
	}
	m.event(context.Background(), testPod(true), "Normal", ReasonEvicted, "again") // create
	m.event(context.Background(), testPod(true), "Normal", ReasonEvicted, "again") // get + update
	checkActions(t, role, cs)
	checkViewReads(t, view)
}

// The webhook only reads ConfigMaps, which admission.yaml's role allows, and
// the manifest registers it as the docs say.
func TestAdmissionManifest(t *testing.T) {
	path := "../deploy/kubernetes/admission.yaml"
	role := clusterRole(t, path, "migpro-admission")
	cs, _ := newMarker(t)
	if _, err := (Store{Client: cs}).Get(context.Background(), ns, testCtrl); err != nil {
		t.Fatal(err)
	}
	checkActions(t, role, cs)
	if allows(role, "", "update", "configmaps", "") || allows(role, "", "create", "configmaps", "") {
		t.Error("the webhook must not be able to write recommendations")
	}
	var mwc *admregv1.MutatingWebhookConfiguration
	for _, o := range manifestObjects(t, path) {
		if w, ok := o.(*admregv1.MutatingWebhookConfiguration); ok {
			mwc = w
		}
	}
	if mwc == nil || len(mwc.Webhooks) != 1 {
		t.Fatalf("want one MutatingWebhookConfiguration with one webhook, got %+v", mwc)
	}
	w := mwc.Webhooks[0]
	switch {
	case w.FailurePolicy == nil || *w.FailurePolicy != admregv1.Ignore:
		t.Error("failurePolicy must be Ignore: a down webhook must never block pods")
	case w.SideEffects == nil || *w.SideEffects != admregv1.SideEffectClassNone:
		t.Error("sideEffects must be None")
	case w.TimeoutSeconds == nil || *w.TimeoutSeconds > 10:
		t.Error("timeoutSeconds must be small")
	case w.ClientConfig.Service == nil || w.ClientConfig.Service.Path == nil || *w.ClientConfig.Service.Path != "/mutate":
		t.Error("the service path must be /mutate")
	case len(w.Rules) != 1 || len(w.Rules[0].Operations) != 1 || w.Rules[0].Operations[0] != admregv1.Create ||
		len(w.Rules[0].Resources) != 1 || w.Rules[0].Resources[0] != "pods":
		t.Errorf("rules %+v, want pod CREATE only", w.Rules)
	case w.NamespaceSelector == nil || w.ObjectSelector == nil:
		t.Error("namespaceSelector and objectSelector must be set")
	case len(w.MatchConditions) != 1 || !strings.Contains(w.MatchConditions[0].Expression, "nvidia.com/mig-"):
		t.Errorf("matchConditions %+v, want only pods asking for a MIG resource (issue 33 low 9)", w.MatchConditions)
	}
}

// The eviction guard's one API call (get the pod) is allowed by
// admission.yaml's role, and the manifest registers it for pods/eviction
// CREATE by the agent's identity only, failing closed.
func TestEvictionGuardManifest(t *testing.T) {
	path := "../deploy/kubernetes/admission.yaml"
	role := clusterRole(t, path, "migpro-admission")
	cs := fake.NewClientset(testPod(true))
	g := must(NewEvictionGuard(cs.CoreV1(), WithLogger(quietlog.New())))
	req := evictionRequestUID(DefaultAgentUser, theNode, testPod(true).Name, podUID)
	if r := g.Review(context.Background(), req); !r.Allowed {
		t.Fatalf("own node's pod refused: %+v", r.Result)
	}
	checkActions(t, role, cs)
	// (list and watch: the node view's, always with a field selector.)
	for _, v := range []string{"patch", "update", "delete"} {
		if allows(role, "", v, "pods", "") {
			t.Errorf("the admission role must not %s pods", v)
		}
	}
	var vwc *admregv1.ValidatingWebhookConfiguration
	for _, o := range manifestObjects(t, path) {
		if w, ok := o.(*admregv1.ValidatingWebhookConfiguration); ok {
			vwc = w
		}
	}
	if vwc == nil || len(vwc.Webhooks) != 2 {
		t.Fatalf("want one ValidatingWebhookConfiguration with two webhooks (evictions, recommendations), got %+v", vwc)
	}
	rg := vwc.Webhooks[1]
	switch {
	case rg.FailurePolicy == nil || *rg.FailurePolicy != admregv1.Fail:
		t.Error("the recommendation guard's failurePolicy must be Fail")
	case rg.ClientConfig.Service == nil || rg.ClientConfig.Service.Path == nil || *rg.ClientConfig.Service.Path != "/validate-recommendation":
		t.Error("the recommendation guard's path must be /validate-recommendation")
	case len(rg.Rules) != 1 || len(rg.Rules[0].Resources) != 1 || rg.Rules[0].Resources[0] != "configmaps" || len(rg.Rules[0].Operations) != 2:
		t.Errorf("recommendation guard rules %+v, want configmaps CREATE and UPDATE", rg.Rules)
	case len(rg.MatchConditions) != 1 || rg.MatchConditions[0].Expression != "request.userInfo.username == '"+DefaultAgentUser+"'":
		t.Errorf("recommendation guard matchConditions %+v, want the agent's user only", rg.MatchConditions)
	}
	w := vwc.Webhooks[0]
	switch {
	case w.FailurePolicy == nil || *w.FailurePolicy != admregv1.Fail:
		t.Error("failurePolicy must be Fail: the agent must not evict unchecked")
	case w.SideEffects == nil || *w.SideEffects != admregv1.SideEffectClassNone:
		t.Error("sideEffects must be None")
	case w.ClientConfig.Service == nil || w.ClientConfig.Service.Path == nil || *w.ClientConfig.Service.Path != "/validate-eviction":
		t.Error("the service path must be /validate-eviction")
	case len(w.Rules) != 1 || len(w.Rules[0].Operations) != 1 || w.Rules[0].Operations[0] != admregv1.Create ||
		len(w.Rules[0].Resources) != 1 || w.Rules[0].Resources[0] != "pods/eviction":
		t.Errorf("rules %+v, want pods/eviction CREATE only", w.Rules)
	case len(w.MatchConditions) != 1 || w.MatchConditions[0].Expression != "request.userInfo.username == '"+DefaultAgentUser+"'":
		t.Errorf("matchConditions %+v, want the agent's user only", w.MatchConditions)
	}
}
