package readmit

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/nodeview"
	"github.com/migpro/migpro/predictor"
)

const (
	ns      = "team"
	rsName  = "train-6b7f9"
	rsUID   = types.UID("rs-uid-1")
	podUID  = types.UID("pod-uid-1")
	res1g   = "nvidia.com/mig-1g.5gb"
	res2g   = "nvidia.com/mig-2g.10gb"
	res3g   = "nvidia.com/mig-3g.20gb"
	gib     = uint64(1) << 30
	theNode = "gpu-node-1"
)

// must is a constructor's value; a constructor that refuses fails the test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// testPod is a ReplicaSet's pod whose container "main" asks for 1g.5gb, and
// a sidecar without GPU.
func testPod(owned bool) *corev1.Pod {
	one := resource.MustParse("1")
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: rsName + "-abcde", Namespace: ns, UID: podUID},
		Spec: corev1.PodSpec{NodeName: theNode, Containers: []corev1.Container{
			{Name: "sidecar", Image: "busybox"},
			{Name: "main", Image: "trainer", Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{res1g: one, corev1.ResourceCPU: resource.MustParse("1")},
				Requests: corev1.ResourceList{res1g: one, corev1.ResourceCPU: resource.MustParse("1")},
			}},
		}},
	}
	if owned {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: rsUID, Controller: &yes}}
	}
	return p
}

func testMark() predictor.Mark {
	return predictor.Mark{PodNamespace: ns, PodName: rsName + "-abcde", PodUID: string(podUID), ContainerName: "main",
		InstanceProfile: "1g.5gb", Profile: "2g.10gb", Forecast: 7 * gib, Reason: predictor.ReasonTimeToOOM, Fits: true}
}

var fastBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 5}

// newMarker returns a fake client holding objs, whose evictions delete the
// pod as the API server does, and a Marker on it.
func newMarker(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *Marker) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		name := a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
		return true, nil, cs.Tracker().Delete(a.GetResource(), a.GetNamespace(), name)
	})
	return cs, markerOn(cs)
}

// markerOn is the tests' Marker (evict mode, fast backoff, a fixed clock) on
// client.
func markerOn(client Client) *Marker {
	m := must(NewMarker(client, WithNodeName(theNode), WithLogger(quietlog.New()), WithEvictBackoff(fastBackoff), WithMode(ModeEvict)))
	m.now = func() time.Time { return time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC) }
	return m
}

// newAgentMarker is newMarker with the agent's client in the chart: reads
// go through migpro-admission's node view (nodeview.ReadsThrough), the rest
// to the API server. api records the calls made to the API server, view
// those made to the view; the view serves api's objects.
func newAgentMarker(t *testing.T, objs ...runtime.Object) (api, view *fake.Clientset, client Client, m *Marker) {
	t.Helper()
	api, _ = newMarker(t, objs...)
	view = &fake.Clientset{}
	view.AddReactor("*", "*", k8stesting.ObjectReaction(api.Tracker()))
	client = nodeview.ReadsThrough(api, view)
	return api, view, client, markerOn(client)
}

// count is how many actions match verb, resource and subresource.
func count(cs *fake.Clientset, verb, res, sub string) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == res && a.GetSubresource() == sub {
			n++
		}
	}
	return n
}

func events(t *testing.T, cs *fake.Clientset) map[string]corev1.Event {
	t.Helper()
	list, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Event{}
	for _, e := range list.Items {
		if _, dup := out[e.Reason]; dup {
			t.Errorf("two %s events", e.Reason)
		}
		out[e.Reason] = e
	}
	return out
}

func storedRecommendation(t *testing.T, cs *fake.Clientset) *Recommendation {
	t.Helper()
	rec, err := Store{Client: cs}.Get(context.Background(), ns, Controller{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: rsUID})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// refuseOnce is a reactor that answers the first eviction with a 429.
func refuseOnce(done *bool) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" || *done {
			return false, nil, nil
		}
		*done = true
		return true, nil, apierrors.NewTooManyRequests("disruption budget", 0)
	}
}
