package readmit

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const deployUID = types.UID("deploy-uid-1")

// replicaSet is a ReplicaSet of Deployment "train".
func replicaSet(name string, uid types.UID) *appsv1.ReplicaSet {
	yes := true
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "train", UID: deployUID, Controller: &yes}}}}
}

// A recommendation is keyed by the Deployment, so the pods of the next
// rollout's ReplicaSet get it too.
func TestRecommendationSurvivesARollout(t *testing.T) {
	cs, m := newMarker(t, testPod(true), replicaSet(rsName, rsUID), replicaSet("train-new", "rs-uid-2"))
	out, err := m.Handle(context.Background(), testMark())
	if err != nil || !out.Evicted {
		t.Fatalf("%+v %v", out, err)
	}
	if out.Controller.Kind != "Deployment" || out.Controller.UID != deployUID {
		t.Fatalf("keyed by %+v, want the Deployment", out.Controller)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), StoreName("Deployment", "train"), metav1.GetOptions{}); err != nil {
		t.Fatalf("no ConfigMap for the Deployment: %v", err)
	}
	// The next rollout's pod: another ReplicaSet of the same Deployment.
	pod := replacement(nil)
	pod.OwnerReferences[0].Name, pod.OwnerReferences[0].UID = "train-new", "rs-uid-2"
	w := NewWebhook(WebhookConfig{Recommendations: Store{Client: cs}, Logger: quietLogger()})
	resp := w.Review(context.Background(), admissionRequest(t, pod))
	if !strings.Contains(string(resp.Patch), "mig-2g.10gb") {
		t.Fatalf("the rollout's pod was not rewritten: %s %q", resp.Patch, resp.Warnings)
	}
}

// A pod created after its owner was already moved off its profile, and still
// on it, means the move did not happen (the webhook was bypassed): it is not
// evicted again, and an Event says why. A pod created before the move is.
func TestMarkerDoesNotMoveTwiceForTheSameReason(t *testing.T) {
	moved := time.Date(2026, 11, 22, 0, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		created time.Time
		evicted bool
	}{
		{"created after the move", moved.Add(time.Minute), false},
		{"created before the move", moved.Add(-time.Minute), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(true)
			pod.CreationTimestamp = metav1.NewTime(tc.created)
			cs, m := newMarker(t, pod)
			if _, err := (Store{Client: cs}).Record(context.Background(), ns, testCtrl,
				Rule{Container: "main", From: res1g, To: res2g, Pod: rsName + "-first", At: moved}); err != nil {
				t.Fatal(err)
			}
			out, err := m.Handle(context.Background(), testMark())
			if err != nil {
				t.Fatal(err)
			}
			if out.Evicted != tc.evicted {
				t.Fatalf("evicted %v (%+v), want %v", out.Evicted, out, tc.evicted)
			}
			if !tc.evicted {
				if ev := events(t, cs)[ReasonNotEvicted]; !strings.Contains(ev.Message, "already moved") {
					t.Errorf("event %q", ev.Message)
				}
				if count(cs, "create", "pods", "eviction") != 0 {
					t.Error("evicted anyway")
				}
			}
		})
	}
}

