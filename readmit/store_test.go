package readmit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	k8stesting "k8s.io/client-go/testing"
)

var testCtrl = Controller{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: rsUID}

func TestRecordRetriesOnConflict(t *testing.T) {
	cs, _ := newMarker(t)
	s := Store{Client: cs}
	ctx := context.Background()
	if _, err := s.Record(ctx, ns, testCtrl, Rule{Container: "main", From: res1g, To: res2g}); err != nil {
		t.Fatal(err)
	}
	// Another writer adds a rule between our read and our update: the first
	// update is refused with Conflict, and the retry must keep both rules.
	conflicts := 1
	cs.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		// The fake client's lock is held here: write through its tracker.
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		obj, err := cs.Tracker().Get(gvr, ns, StoreName("ReplicaSet", rsName))
		if err != nil {
			t.Fatal(err)
		}
		cm := obj.(*corev1.ConfigMap).DeepCopy()
		rec, _ := decodeRecommendation(cm)
		rec.set(Rule{Container: "other", From: res1g, To: res3g})
		b, _ := json.Marshal(rec)
		cm.Data[RecommendationKey] = string(b)
		if err := cs.Tracker().Update(gvr, cm, ns); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", nil)
	})
	changed, err := s.Record(ctx, ns, testCtrl, Rule{Container: "main", From: res2g, To: res3g})
	if err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if conflicts != 0 {
		t.Fatal("the conflict was never raised")
	}
	rec := storedRecommendation(t, cs)
	if len(rec.Rules) != 3 {
		t.Fatalf("rules %+v, want 3 (none lost to the conflict)", rec.Rules)
	}
	// 1g → 2g → 3g chains for main; other goes straight to 3g.
	for _, c := range []string{"main", "other"} {
		if to, ok := rec.Target(c, res1g); !ok || to != res3g {
			t.Errorf("%s: target %q %v", c, to, ok)
		}
	}
	if _, ok := rec.Target("third", res1g); ok {
		t.Error("a rule for a named container applied to another")
	}
}

func TestRecordRetriesWhenCreateRaces(t *testing.T) {
	cs, _ := newMarker(t)
	ctx := context.Background()
	raced := false
	cs.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		// The other writer wins the create.
		cm, _ := newStoreConfigMap(ns, StoreName("ReplicaSet", rsName), Recommendation{Controller: testCtrl,
			Rules: []Rule{{Container: "other", From: res1g, To: res2g}}})
		if err := cs.Tracker().Add(cm); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "configmaps"}, cm.Name)
	})
	if _, err := (Store{Client: cs}).Record(ctx, ns, testCtrl, Rule{Container: "main", From: res1g, To: res2g}); err != nil {
		t.Fatal(err)
	}
	if rec := storedRecommendation(t, cs); len(rec.Rules) != 2 {
		t.Fatalf("rules %+v, want both writers'", rec.Rules)
	}
}

func TestStoreIgnoresAnOlderControllerOfTheSameName(t *testing.T) {
	cs, _ := newMarker(t)
	s := Store{Client: cs}
	ctx := context.Background()
	old := testCtrl
	old.UID = "deleted-rs"
	if _, err := s.Record(ctx, ns, old, Rule{From: res1g, To: res3g}); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.Get(ctx, ns, testCtrl); err != nil || rec != nil {
		t.Fatalf("got %+v %v for a new controller of the same name", rec, err)
	}
	if _, err := s.Record(ctx, ns, testCtrl, Rule{Container: "main", From: res1g, To: res2g}); err != nil {
		t.Fatal(err)
	}
	rec := storedRecommendation(t, cs)
	if len(rec.Rules) != 1 || rec.Rules[0].To != res2g {
		t.Fatalf("rules %+v: the old controller's must be dropped", rec.Rules)
	}
	cm, _ := cs.CoreV1().ConfigMaps(ns).Get(ctx, StoreName("ReplicaSet", rsName), metav1.GetOptions{})
	if cm.OwnerReferences[0].UID != rsUID {
		t.Errorf("owner %v, want the new controller", cm.OwnerReferences)
	}
}

func TestStoreGetBadData(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: StoreName("ReplicaSet", rsName), Namespace: ns, Labels: managedLabels},
		Data: map[string]string{RecommendationKey: "{not json"}}
	cs, _ := newMarker(t, cm)
	if _, err := (Store{Client: cs}).Get(context.Background(), ns, testCtrl); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("want a decode error, got %v", err)
	}
	// Record repairs it.
	if _, err := (Store{Client: cs}).Record(context.Background(), ns, testCtrl, Rule{From: res1g, To: res2g}); err != nil {
		t.Fatal(err)
	}
	if rec := storedRecommendation(t, cs); rec == nil || len(rec.Rules) != 1 {
		t.Fatalf("not repaired: %+v", rec)
	}
}

func TestTargetStopsOnCycles(t *testing.T) {
	rec := &Recommendation{Rules: []Rule{{From: res1g, To: res2g}, {From: res2g, To: res1g}, {From: res3g, To: res3g}}}
	if to, ok := rec.Target("c", res1g); !ok || to != res2g {
		t.Errorf("1g: %q %v", to, ok)
	}
	if to, ok := rec.Target("c", res3g); ok {
		t.Errorf("3g → itself must not apply, got %q", to)
	}
}

func TestStoreNamesAreValid(t *testing.T) {
	for _, name := range []string{"web-6b7f9", strings.Repeat("a", 250), "x.y.z"} {
		n := StoreName("ReplicaSet", name)
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			t.Errorf("%q: %v", n, errs)
		}
	}
	if StoreName("ReplicaSet", "a") == StoreName("StatefulSet", "a") {
		t.Error("kinds collide")
	}
}
