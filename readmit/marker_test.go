package readmit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/migpro/migpro/predictor"
)

func TestHandleRecordsAndEvicts(t *testing.T) {
	cs, m := newMarker(t, testPod(true))
	ctx := context.Background()
	// Read the annotation as the eviction sees the pod: the eviction deletes it.
	var annotated PredictedOOM
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "eviction" {
			p, err := cs.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ns, testPod(true).Name)
			if err != nil {
				t.Fatalf("pod gone before eviction: %v", err)
			}
			if err := json.Unmarshal([]byte(p.(*corev1.Pod).Annotations[AnnotationPredictedOOM]), &annotated); err != nil {
				t.Errorf("annotation at eviction: %v", err)
			}
		}
		return false, nil, nil
	})
	out, err := m.Handle(ctx, testMark())
	if err != nil {
		t.Fatal(err)
	}
	if !out.Evicted || !out.Recorded || out.From != res1g || out.To != res2g || out.Controller.Name != rsName {
		t.Fatalf("outcome %+v", out)
	}
	if annotated.From != res1g || annotated.To != res2g || annotated.Container != "main" || annotated.ForecastBytes != 7*gib {
		t.Errorf("annotation %+v", annotated)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, testPod(true).Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod still there after eviction: %v", err)
	}
	ev := events(t, cs)
	if e, ok := ev[ReasonPredictedOOM]; !ok || !strings.Contains(e.Message, "7.00 GiB") || !strings.Contains(e.Message, res2g) ||
		e.Type != corev1.EventTypeWarning || e.InvolvedObject.UID != podUID || e.Source.Host != theNode {
		t.Errorf("PredictedOOM event: %+v", e)
	}
	if _, ok := ev[ReasonEvicted]; !ok {
		t.Errorf("no %s event: %v", ReasonEvicted, ev)
	}
	rec := storedRecommendation(t, cs)
	if rec == nil {
		t.Fatal("no recommendation stored")
	}
	if to, ok := rec.Target("main", res1g); !ok || to != res2g {
		t.Errorf("recommendation target %q %v, rules %+v", to, ok, rec.Rules)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, StoreName("ReplicaSet", rsName), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != rsUID || cm.Labels[LabelRecommendation] != "true" {
		t.Errorf("store ConfigMap metadata: %+v", cm.ObjectMeta)
	}
	if n := count(cs, "create", "pods", "eviction"); n != 1 {
		t.Errorf("%d evictions, want 1", n)
	}
}

func TestHandleTwiceIsIdempotent(t *testing.T) {
	cs, m := newMarker(t, testPod(true))
	// An eviction the API server accepts but whose pod lingers (terminating).
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return a.GetSubresource() == "eviction", nil, nil
	})
	ctx := context.Background()
	for i := range 2 {
		out, err := m.Handle(ctx, testMark())
		if err != nil || !out.Evicted {
			t.Fatalf("call %d: %+v %v", i+1, out, err)
		}
		if out.Recorded != (i == 0) {
			t.Errorf("call %d: recorded=%v", i+1, out.Recorded)
		}
	}
	if n := count(cs, "patch", "pods", ""); n != 1 {
		t.Errorf("pod patched %d times, want 1 (the second mark finds the annotation)", n)
	}
	if n := count(cs, "update", "configmaps", "") + count(cs, "create", "configmaps", ""); n != 1 {
		t.Errorf("recommendation written %d times, want 1", n)
	}
	ev := events(t, cs) // fails on duplicate reasons
	if ev[ReasonPredictedOOM].Count != 2 {
		t.Errorf("PredictedOOM count %d, want 2 (bumped, not duplicated)", ev[ReasonPredictedOOM].Count)
	}
}

func TestHandleRetriesWhileBudgetRefuses(t *testing.T) {
	cs, m := newMarker(t, testPod(true))
	refusals := 2
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "eviction" && refusals > 0 {
			refusals--
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		return false, nil, nil
	})
	out, err := m.Handle(context.Background(), testMark())
	if err != nil || !out.Evicted {
		t.Fatalf("%+v %v", out, err)
	}
	if n := count(cs, "create", "pods", "eviction"); n != 3 {
		t.Errorf("%d eviction attempts, want 3", n)
	}
	ev := events(t, cs)
	if e, ok := ev[ReasonEvictionBlocked]; !ok || !strings.Contains(e.Message, "disruption budget") || e.Count != 1 {
		t.Errorf("blocked event %+v (present %v)", e, ok)
	}
	if _, ok := ev[ReasonEvicted]; !ok {
		t.Error("no evicted event")
	}
}

func TestHandleGivesUpWhenBudgetNeverAllows(t *testing.T) {
	cs, m := newMarker(t, testPod(true))
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "eviction" {
			return true, nil, apierrors.NewTooManyRequests("disruption budget", 0)
		}
		return false, nil, nil
	})
	out, err := m.Handle(context.Background(), testMark())
	if err == nil || out.Evicted || !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "still refused") {
		t.Fatalf("want a refusal error, got %+v %v", out, err)
	}
	if n := count(cs, "create", "pods", "eviction"); n != fastBackoff.Steps+1 {
		t.Errorf("%d attempts, want %d", n, fastBackoff.Steps+1)
	}
	ev := events(t, cs)
	if _, ok := ev[ReasonNotEvicted]; !ok {
		t.Errorf("no %s event: %v", ReasonNotEvicted, ev)
	}
	if storedRecommendation(t, cs) == nil {
		t.Error("the recommendation must stay stored for a later eviction")
	}
}

func TestHandleStopsRetryingOnCancel(t *testing.T) {
	cs, m := newMarker(t, testPod(true))
	m.backoff.Duration, m.backoff.Steps = 1<<40, 3 // would wait forever
	ctx, cancel := context.WithCancel(context.Background())
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "eviction" {
			cancel()
			return true, nil, apierrors.NewTooManyRequests("disruption budget", 0)
		}
		return false, nil, nil
	})
	if _, err := m.Handle(ctx, testMark()); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestHandleBarePodIsNotEvicted(t *testing.T) {
	cs, m := newMarker(t, testPod(false))
	out, err := m.Handle(context.Background(), testMark())
	if err != nil || out.Evicted || out.Ignored != "pod has no controller" {
		t.Fatalf("%+v %v", out, err)
	}
	if n := count(cs, "create", "pods", "eviction"); n != 0 {
		t.Errorf("%d evictions of a bare pod", n)
	}
	if n := count(cs, "create", "configmaps", ""); n != 0 {
		t.Errorf("recommendation stored for a bare pod")
	}
	e := events(t, cs)[ReasonPredictedOOM]
	if !strings.Contains(e.Message, "no controller") || !strings.Contains(e.Message, res2g) {
		t.Errorf("event message %q", e.Message)
	}
	p, _ := cs.CoreV1().Pods(ns).Get(context.Background(), testPod(false).Name, metav1.GetOptions{})
	if p.Annotations[AnnotationPredictedOOM] == "" {
		t.Error("bare pod not annotated")
	}
}

func TestHandleIgnores(t *testing.T) {
	other := testPod(true)
	other.Spec.NodeName = "elsewhere"
	noFit := testMark()
	noFit.Profile, noFit.Fits = "", false
	sameProfile := testMark()
	sameProfile.Profile = "1g.5gb"
	wrongUID := testMark()
	wrongUID.PodUID = "older"
	noPod := testMark()
	noPod.PodName = ""
	wrongProfile := testMark()
	wrongProfile.InstanceProfile = "4g.20gb"
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		mark     predictor.Mark
		ignored  string
		annotate bool
	}{
		{"no pod identity", testPod(true), noPod, "no pod identity", false},
		{"other node", other, testMark(), "node elsewhere", false},
		{"newer pod", testPod(true), wrongUID, "newer", false},
		{"same profile", testPod(true), sameProfile, "current one", false},
		{"profile not asked", testPod(true), wrongProfile, "does not ask for nvidia.com/mig-4g.20gb", false},
		{"no profile fits", testPod(true), noFit, "no profile fits", true},
		{"pod gone", nil, testMark(), "gone", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.pod != nil {
				objs = append(objs, tc.pod)
			}
			cs, m := newMarker(t, objs...)
			out, err := m.Handle(context.Background(), tc.mark)
			if err != nil || !strings.Contains(out.Ignored, tc.ignored) || out.Evicted {
				t.Fatalf("%+v %v, want ignored %q", out, err, tc.ignored)
			}
			if n := count(cs, "create", "pods", "eviction") + count(cs, "create", "configmaps", ""); n != 0 {
				t.Errorf("%d writes, want none", n)
			}
			if n := count(cs, "patch", "pods", ""); (n == 1) != tc.annotate {
				t.Errorf("%d annotation patches, want annotate=%v", n, tc.annotate)
			}
		})
	}
}

func TestEvictConflict(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, rsName+"-abcde", errors.New("precondition failed"))
	t.Run("same pod: retried", func(t *testing.T) {
		cs, m := newMarker(t, testPod(true))
		once := false
		cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() == "eviction" && !once {
				once = true
				return true, nil, conflict
			}
			return false, nil, nil
		})
		out, err := m.Handle(context.Background(), testMark())
		if err != nil || !out.Evicted || count(cs, "create", "pods", "eviction") != 2 {
			t.Fatalf("%+v %v, %d attempts", out, err, count(cs, "create", "pods", "eviction"))
		}
		if _, err := cs.CoreV1().Pods(ns).Get(context.Background(), rsName+"-abcde", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Error("the retry did not evict")
		}
	})
	t.Run("newer pod: done", func(t *testing.T) {
		cs, m := newMarker(t, testPod(true))
		cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "eviction" {
				return false, nil, nil
			}
			// A newer pod of the same name replaced the marked one.
			newer := testPod(true)
			newer.UID = "newer"
			if err := cs.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, newer, ns); err != nil {
				t.Fatal(err)
			}
			return true, nil, conflict
		})
		out, err := m.Handle(context.Background(), testMark())
		if err != nil || !out.Evicted || count(cs, "create", "pods", "eviction") != 1 {
			t.Fatalf("%+v %v, %d attempts", out, err, count(cs, "create", "pods", "eviction"))
		}
		if p, _ := cs.CoreV1().Pods(ns).Get(context.Background(), rsName+"-abcde", metav1.GetOptions{}); p == nil || p.UID != "newer" {
			t.Error("the newer pod must be left alone")
		}
	})
}
