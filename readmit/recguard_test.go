package readmit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/migpro/migpro/internal/quietlog"
)

// recRequest is the admission request of the agent (bound to node) writing
// the recommendation rec (over old, when set) for the test ReplicaSet.
func recRequest(t *testing.T, node string, rec Recommendation, old *Recommendation) *admissionv1.AdmissionRequest {
	t.Helper()
	raw := func(r Recommendation) []byte {
		cm, err := newStoreConfigMap(ns, StoreName(r.Controller.Kind, r.Controller.Name), r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(cm)
		return b
	}
	ui := authnv1.UserInfo{Username: DefaultAgentUser}
	if node != "" {
		ui.Extra = map[string]authnv1.ExtraValue{NodeNameExtra: {node}}
	}
	req := &admissionv1.AdmissionRequest{UID: "cm-1", Resource: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		Name: StoreName(rec.Controller.Kind, rec.Controller.Name), Namespace: ns, Operation: admissionv1.Create, UserInfo: ui,
		Object: runtime.RawExtension{Raw: raw(rec)}}
	if old != nil {
		req.Operation, req.OldObject = admissionv1.Update, runtime.RawExtension{Raw: raw(*old)}
	}
	return req
}

// A node's agent records a rule only for a pod that runs on its node and
// belongs to the recommendation's controller; unchanged rules of other
// nodes, run counting and dropped rules pass.
func TestRecommendationGuardKeepsRulesToTheWritersNode(t *testing.T) {
	other := testPod(true)
	other.Name, other.UID, other.Spec.NodeName = "train-other", "pod-uid-2", "gpu-node-2"
	cs := fake.NewClientset(testPod(true), other)
	g := NewRecommendationGuard(Store{Client: cs}, WithLogger(quietlog.New()))
	ctrl := Controller{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: rsUID}
	mine := Rule{Container: "main", From: res1g, To: res2g, Pod: rsName + "-abcde", PodUID: podUID, Node: theNode, At: time.Unix(1, 0).UTC()}
	theirs := Rule{Container: "main", From: res2g, To: res3g, Pod: "train-other", PodUID: "pod-uid-2", Node: "gpu-node-2", At: time.Unix(1, 0).UTC()}
	rec := func(rules ...Rule) Recommendation { return Recommendation{Controller: ctrl, Rules: rules} }
	counted := theirs
	counted.FitRuns = 2
	forged := mine
	forged.Node = "gpu-node-2"
	steered := mine
	steered.Pod, steered.PodUID = "train-other", "pod-uid-2"
	wrongCtrl := rec(mine)
	wrongCtrl.Controller.UID = "another-rs"
	for _, c := range []struct {
		name  string
		node  string
		rec   Recommendation
		old   *Recommendation
		allow bool
		why   string
	}{
		{"own pod, own node", theNode, rec(mine), nil, true, ""},
		{"another node's rule left as it was, run counted", theNode, rec(mine, counted), recPtr(rec(theirs)), true, ""},
		{"a rule dropped", theNode, rec(), recPtr(rec(theirs)), true, ""},
		{"a read (empty patch)", "gpu-node-3", rec(theirs), recPtr(rec(theirs)), true, ""},
		{"rule naming another node", theNode, rec(forged), nil, false, "only for its own node"},
		{"rule for a pod on another node", theNode, rec(steered), nil, false, "is not on it"},
		{"another node's rule rewritten", theNode, rec(Rule{Container: "main", From: res2g, To: res1g, Pod: "train-other", PodUID: "pod-uid-2", Node: "gpu-node-2"}), recPtr(rec(theirs)), false, "only for its own node"},
		{"token bound to no node", "", rec(mine), nil, false, "bound to its node"},
		{"rule for a pod of another controller", theNode, wrongCtrl, nil, false, "does not belong to"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := g.Review(context.Background(), recRequest(t, c.node, c.rec, c.old))
			if resp.Allowed != c.allow {
				t.Fatalf("allowed = %v (%v), want %v", resp.Allowed, resp.Result, c.allow)
			}
			if !c.allow && !strings.Contains(resp.Result.Message, c.why) {
				t.Fatalf("message %q does not say %q", resp.Result.Message, c.why)
			}
		})
	}
	// Other users and other ConfigMaps are not the guard's business.
	req := recRequest(t, theNode, rec(forged), nil)
	req.UserInfo.Username = "system:admin"
	if !g.Review(context.Background(), req).Allowed {
		t.Error("an admin's write was refused")
	}
}

func recPtr(r Recommendation) *Recommendation { return &r }
