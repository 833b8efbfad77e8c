package demand

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/migpro/migpro/internal/quietlog"
)

var t0 = time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)

// fakeProv is a node with room for a fixed number of new instances per
// profile; it records what it was asked.
type fakeProv struct {
	mu    sync.Mutex
	idle  map[string]int
	room  map[string]int // how many more can be made
	made  int
	keeps []Reserved // the keep passed to each Provision
	// optimistic makes CanFit say yes whatever the room, as a node whose
	// state changes between the check and the provisioning.
	optimistic bool
	// pending is the last ObservePending report, reports how many came.
	pending map[string]int
	reports int
}

func (f *fakeProv) ObservePending(counts map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = counts
	f.reports++
}

func (f *fakeProv) lastPending() (map[string]int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pending, f.reports
}

func newProv(idle, room map[string]int) *fakeProv {
	if idle == nil {
		idle = map[string]int{}
	}
	if room == nil {
		room = map[string]int{}
	}
	return &fakeProv{idle: idle, room: room}
}

func (f *fakeProv) CanFit(profile string, n int, keep Reserved) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.optimistic {
		return true
	}
	return max(f.idle[profile]-keep[profile], 0)+f.room[profile] >= n
}

func (f *fakeProv) Provision(_ context.Context, profile string, keep Reserved) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cp := Reserved{}
	for k, v := range keep {
		cp[k] = v
	}
	f.keeps = append(f.keeps, cp)
	if f.room[profile] <= 0 {
		return fmt.Errorf("%s: no room", profile)
	}
	f.room[profile]--
	f.idle[profile]++
	f.made++
	return nil
}

func (f *fakeProv) IdleCount(profile string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.idle[profile]
}

func (f *fakeProv) madeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.made
}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// casClient is a fake clientset whose pod patches behave like the API
// server's: every stored pod has a resourceVersion, a patch that names an
// older one gets a Conflict, and a successful one bumps it.
func casClient(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *int) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	var mu sync.Mutex
	rv := 100
	patches := 0
	cs.PrependReactor("patch", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pa := action.(k8stesting.PatchAction)
		mu.Lock()
		defer mu.Unlock()
		patches++
		obj, err := cs.Tracker().Get(podsGVR, pa.GetNamespace(), pa.GetName())
		if err != nil {
			return true, nil, err
		}
		cur := obj.(*corev1.Pod)
		var meta struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(pa.GetPatch(), &meta); err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		if want := meta.Metadata.ResourceVersion; want != "" && want != cur.ResourceVersion {
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), cur.Name,
				fmt.Errorf("the object has been modified (resourceVersion %s, patch from %s)", cur.ResourceVersion, want))
		}
		curJSON, _ := json.Marshal(cur)
		merged, err := jsonpatch.MergePatch(curJSON, pa.GetPatch())
		if err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		next := &corev1.Pod{}
		if err := json.Unmarshal(merged, next); err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		rv++
		next.ResourceVersion = fmt.Sprint(rv)
		if err := cs.Tracker().Update(podsGVR, next, next.Namespace); err != nil {
			return true, nil, err
		}
		return true, next, nil
	})
	return cs, &patches
}

var testResources = map[corev1.ResourceName]string{
	"nvidia.com/mig-1g.5gb":     "1g.5gb",
	"nvidia.com/mig-1g.10gb":    "1g.10gb",
	"nvidia.com/mig-1g.10gb.me": "1g.10gb+me",
	"nvidia.com/mig-3g.20gb":    "3g.20gb",
}

// testSource makes a Source for node whose cache is filled from the client
// by refresh (no informer), with a settable clock.
type testSource struct {
	*Source
	cs  *fake.Clientset
	now time.Time
}

func newTestSource(t *testing.T, cs *fake.Clientset, node string, prov Provisioner) *testSource {
	t.Helper()
	ts := &testSource{cs: cs, now: t0}
	s, err := New(cs, node, prov, WithResources(testResources), WithLogger(quietlog.New()),
		WithClock(func() time.Time { return ts.now }))
	if err != nil {
		t.Fatal(err)
	}
	s.store = cache.NewStore(cache.MetaNamespaceKeyFunc)
	ts.Source = s
	return ts
}

// refresh reloads the cache from the API, as the watch would.
func (ts *testSource) refresh(t *testing.T) {
	t.Helper()
	list, err := ts.cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var objs []any
	for i := range list.Items {
		objs = append(objs, &list.Items[i])
	}
	if err := ts.store.Replace(objs, ""); err != nil {
		t.Fatal(err)
	}
}

func (ts *testSource) pass(t *testing.T) {
	t.Helper()
	ts.refresh(t)
	ts.Reconcile(context.Background())
}

func readyNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// migPod is a pending pod the scheduler found unschedulable, asking for
// resources (name -> count).
func migPod(name string, res map[string]int64) *corev1.Pod {
	limits := corev1.ResourceList{}
	for r, n := range res {
		limits[corev1.ResourceName(r)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: ktypes.UID("uid-" + name), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Minute))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "x",
			Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/1 nodes are available: 1 Insufficient nvidia.com/mig-1g.5gb."}}},
	}
}

func getPod(t *testing.T, cs *fake.Clientset, name string) *corev1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func claimedBy(t *testing.T, cs *fake.Clientset, name string) string {
	t.Helper()
	return getPod(t, cs, name).Annotations[AnnotationClaimedBy]
}
