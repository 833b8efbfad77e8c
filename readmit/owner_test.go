package readmit

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migpro/migpro/internal/quietlog"
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
	w := NewWebhook(Store{Client: cs}, WithLogger(quietlog.New()))
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
		rule    Rule
		evicted bool
	}{
		{"created after the move", moved.Add(time.Minute), Rule{Pod: rsName + "-first"}, false},
		// Timestamps are whole seconds: a replacement is normally created
		// in the second its predecessor was evicted.
		{"created in the second of the move", moved, Rule{Pod: rsName + "-first"}, false},
		{"created before the move", moved.Add(-time.Minute), Rule{Pod: rsName + "-first"}, true},
		// A StatefulSet's replacement has its predecessor's name: the UID
		// tells them apart.
		{"same name, another pod", moved.Add(time.Minute), Rule{Pod: rsName + "-abcde", PodUID: "old-uid"}, false},
		{"the same pod marked again", moved.Add(-time.Minute), Rule{Pod: rsName + "-abcde", PodUID: podUID}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(true)
			pod.CreationTimestamp = metav1.NewTime(tc.created)
			cs, m := newMarker(t, pod)
			rule := tc.rule
			rule.Container, rule.From, rule.To, rule.At = "main", res1g, res2g, moved
			if _, err := (Store{Client: cs}).Record(context.Background(), ns, testCtrl, rule); err != nil {
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

// gpuNode is a node whose capacity lists the MIG profiles in offers.
func gpuNode(name string, offers ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Capacity: corev1.ResourceList{}}}
	for _, o := range offers {
		n.Status.Capacity[corev1.ResourceName(o)] = resource.MustParse("1")
	}
	return n
}

// zeroOf sets n's capacity of res to zero: a registered plugin with no
// device yet, as a migpro node has before it makes the first instance.
func zeroOf(n *corev1.Node, res string) *corev1.Node {
	n.Status.Capacity[corev1.ResourceName(res)] = resource.MustParse("0")
	return n
}

// When nodes advertise MIG profiles but none the recommended one, nothing is
// evicted and an Event says so; when some node offers it, the pod moves.
func TestMarkerEvictsOnlyTowardsAnOfferedProfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nodes   []*corev1.Node
		evicted bool
	}{
		{"no node offers it", []*corev1.Node{gpuNode(theNode, res1g), gpuNode("other", res1g, res3g)}, false},
		{"another node offers it", []*corev1.Node{gpuNode(theNode, res1g), gpuNode("other", res2g)}, true},
		{"a node offers it with no instance yet", []*corev1.Node{gpuNode(theNode, res1g), zeroOf(gpuNode("other", res2g), res2g)}, true},
		{"no MIG capacity known", []*corev1.Node{gpuNode(theNode)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{testPod(true)}
			for _, n := range tc.nodes {
				objs = append(objs, n)
			}
			cs, m := newMarker(t, objs...)
			out, err := m.Handle(context.Background(), testMark())
			if err != nil || out.Evicted != tc.evicted {
				t.Fatalf("%+v %v, want evicted %v", out, err, tc.evicted)
			}
			if !tc.evicted && !strings.Contains(events(t, cs)[ReasonPredictedOOM].Message, "which no node offers: not evicted") {
				t.Errorf("events %+v", events(t, cs))
			}
		})
	}
}
