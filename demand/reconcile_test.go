package demand

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/migpro/migpro/internal/quietlog"
)

func TestClaimsAndProvisions(t *testing.T) {
	cs, _ := casClient(t, readyNode("node-a"), migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 1}))
	prov := newProv(nil, map[string]int{"1g.5gb": 7})
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	pod := getPod(t, cs, "p")
	if got := pod.Annotations[AnnotationClaimedBy]; got != "node-a" {
		t.Fatalf("claimed-by = %q, want node-a", got)
	}
	if got := pod.Annotations[AnnotationClaimedAt]; got != t0.Format(time.RFC3339) {
		t.Errorf("claimed-at = %q, want %s", got, t0.Format(time.RFC3339))
	}
	if pod.Annotations[AnnotationProvisionedAt] == "" {
		t.Error("provisioned-at not set after provisioning")
	}
	if prov.madeCount() != 1 || prov.IdleCount("1g.5gb") != 1 {
		t.Fatalf("made %d, idle %d; want 1 and 1", prov.madeCount(), prov.IdleCount("1g.5gb"))
	}
	// The scheduler has not caught up yet: later passes make nothing more.
	s.now = s.now.Add(10 * time.Second)
	s.pass(t)
	s.pass(t)
	if prov.madeCount() != 1 {
		t.Fatalf("made %d instances for one pod over three passes", prov.madeCount())
	}
}

func TestPodAskingForTwoGetsTwo(t *testing.T) {
	cs, _ := casClient(t, readyNode("node-a"),
		migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-1g.10gb.me": 1}))
	prov := newProv(nil, map[string]int{"1g.5gb": 7, "1g.10gb+me": 1})
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	if claimedBy(t, cs, "p") != "node-a" {
		t.Fatal("not claimed")
	}
	if prov.IdleCount("1g.5gb") != 2 || prov.IdleCount("1g.10gb+me") != 1 {
		t.Fatalf("idle %v, want 1g.5gb x2 and 1g.10gb+me x1", prov.idle)
	}
}

func TestIdleInstanceAlreadyCoversPod(t *testing.T) {
	cs, _ := casClient(t, readyNode("node-a"), migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 1}))
	prov := newProv(map[string]int{"1g.5gb": 1}, nil) // an idle one, no room for more
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	pod := getPod(t, cs, "p")
	if pod.Annotations[AnnotationClaimedBy] != "node-a" || pod.Annotations[AnnotationProvisionedAt] == "" {
		t.Fatalf("pod covered by an idle instance: annotations %v, want claimed and provisioned", pod.Annotations)
	}
	if prov.madeCount() != 0 {
		t.Fatalf("made %d instances, want 0", prov.madeCount())
	}
}

// One idle instance covers one pod, not two: the second pod needs a new
// one, and the idle one is reserved while it is made.
func TestIdleInstanceIsReservedNotCountedTwice(t *testing.T) {
	a := migPod("a", map[string]int64{"nvidia.com/mig-1g.5gb": 1})
	b := migPod("b", map[string]int64{"nvidia.com/mig-1g.5gb": 1})
	b.CreationTimestamp = metav1.NewTime(a.CreationTimestamp.Add(time.Second))
	cs, _ := casClient(t, readyNode("node-a"), a, b)
	prov := newProv(map[string]int{"1g.5gb": 1}, map[string]int{"1g.5gb": 1})
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	if claimedBy(t, cs, "a") != "node-a" || claimedBy(t, cs, "b") != "node-a" {
		t.Fatal("both pods should be claimed")
	}
	if prov.madeCount() != 1 || prov.IdleCount("1g.5gb") != 2 {
		t.Fatalf("made %d, idle %d; want 1 made, 2 idle", prov.madeCount(), prov.IdleCount("1g.5gb"))
	}
	if k := prov.keeps[0]["1g.5gb"]; k != 1 {
		t.Fatalf("provisioning for b kept %d idle 1g.5gb reserved, want a's 1", k)
	}
	// Without room, the second pod is not claimed at all.
	cs2, _ := casClient(t, readyNode("node-a"), a.DeepCopy(), b.DeepCopy())
	prov2 := newProv(map[string]int{"1g.5gb": 1}, nil)
	s2 := newTestSource(t, cs2, "node-a", prov2)
	s2.pass(t)
	if claimedBy(t, cs2, "a") != "node-a" || claimedBy(t, cs2, "b") != "" {
		t.Fatalf("claims a=%q b=%q, want a only", claimedBy(t, cs2, "a"), claimedBy(t, cs2, "b"))
	}
}

// A pod asking for more than the node can make is not claimed.
func TestNoClaimWithoutRoomForAll(t *testing.T) {
	cs, patches := casClient(t, readyNode("node-a"), migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 3}))
	prov := newProv(map[string]int{"1g.5gb": 1}, map[string]int{"1g.5gb": 1})
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	if *patches != 0 || prov.madeCount() != 0 {
		t.Fatalf("claimed a pod asking for 3 with room for 2: %d patches, %d made", *patches, prov.madeCount())
	}
}

func TestNoClaimWithoutRoom(t *testing.T) {
	cs, patches := casClient(t, readyNode("node-a"), migPod("p", map[string]int64{"nvidia.com/mig-3g.20gb": 1}))
	prov := newProv(nil, map[string]int{"1g.5gb": 7})
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	if *patches != 0 || prov.madeCount() != 0 {
		t.Fatalf("node without room patched %d times and made %d", *patches, prov.madeCount())
	}
}

func TestIgnoredPods(t *testing.T) {
	scheduled := migPod("scheduled", map[string]int64{"nvidia.com/mig-1g.5gb": 1})
	scheduled.Spec.NodeName = "node-b"
	notTried := migPod("not-tried", map[string]int64{"nvidia.com/mig-1g.5gb": 1})
	notTried.Status.Conditions = nil
	noMIG := migPod("no-mig", map[string]int64{"cpu": 1})
	foreign := migPod("foreign", map[string]int64{"nvidia.com/mig-1g.5gb": 1, "nvidia.com/mig-7g.80gb": 1})
	deleting := migPod("deleting", map[string]int64{"nvidia.com/mig-1g.5gb": 1})
	now := metav1.NewTime(t0)
	deleting.DeletionTimestamp = &now
	otherDomain := migPod("other-domain", map[string]int64{"example.com/mig-1g.5gb": 1})
	cs, patches := casClient(t, readyNode("node-a"), scheduled, notTried, noMIG, foreign, deleting, otherDomain)
	prov := newProv(nil, map[string]int{"1g.5gb": 7})
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	if *patches != 0 || prov.madeCount() != 0 {
		t.Fatalf("patched %d pods and made %d instances; every pod here should be ignored", *patches, prov.madeCount())
	}
}

func claimedPod(name, by string, at time.Time) *corev1.Pod {
	p := migPod(name, map[string]int64{"nvidia.com/mig-1g.5gb": 1})
	p.Annotations = map[string]string{AnnotationClaimedBy: by, AnnotationClaimedAt: at.Format(time.RFC3339)}
	return p
}

func TestLiveClaimOfAnotherNodeIsLeftAlone(t *testing.T) {
	cs, patches := casClient(t, readyNode("node-a"), readyNode("node-b"), claimedPod("p", "node-b", t0.Add(-10*time.Second)))
	prov := newProv(nil, map[string]int{"1g.5gb": 7})
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	if *patches != 0 || prov.madeCount() != 0 || claimedBy(t, cs, "p") != "node-b" {
		t.Fatalf("took a live claim: %d patches, %d made", *patches, prov.madeCount())
	}
}

func TestStaleClaimsAreTakenOver(t *testing.T) {
	notReady := readyNode("node-b")
	notReady.Status.Conditions[0].Status = corev1.ConditionUnknown
	provisioned := claimedPod("p", "node-b", t0.Add(-10*time.Minute))
	provisioned.Annotations[AnnotationProvisionedAt] = t0.Add(-4 * time.Minute).Format(time.RFC3339)
	garbled := claimedPod("p", "node-b", t0)
	garbled.Annotations[AnnotationClaimedAt] = "yesterday"
	cases := []struct {
		name  string
		objs  []runtime.Object
		stale bool
	}{
		{"claimer gone", []runtime.Object{claimedPod("p", "node-b", t0)}, true},
		{"claimer not ready", []runtime.Object{notReady, claimedPod("p", "node-b", t0)}, true},
		{"not provisioned in time", []runtime.Object{readyNode("node-b"), claimedPod("p", "node-b", t0.Add(-2*time.Minute))}, true},
		{"provisioned, not scheduled in time", []runtime.Object{readyNode("node-b"), provisioned}, true},
		{"unreadable claim", []runtime.Object{readyNode("node-b"), garbled}, true},
		// A claim dated in the future never timed out: provisioning for
		// the pod stalled on every node (issue 33).
		{"claim dated in the future", []runtime.Object{readyNode("node-b"), claimedPod("p", "node-b", t0.Add(24*time.Hour))}, true},
		{"fresh claim of a live node", []runtime.Object{readyNode("node-b"), claimedPod("p", "node-b", t0.Add(-30*time.Second))}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs, _ := casClient(t, append(c.objs, readyNode("node-a"))...)
			prov := newProv(nil, map[string]int{"1g.5gb": 7})
			s := newTestSource(t, cs, "node-a", prov)
			s.pass(t)
			want := "node-b"
			if c.stale {
				want = "node-a"
			}
			if got := claimedBy(t, cs, "p"); got != want {
				t.Fatalf("claimed-by = %q, want %q", got, want)
			}
			if c.stale && getPod(t, cs, "p").Annotations[AnnotationProvisionedAt] == "" {
				t.Fatal("took the claim over but did not provision")
			}
		})
	}
}

// A node that claimed a pod asking for two instances but can make only one
// (it had room for two when it checked) gives the claim up, and does not
// claim it again until Backoff has passed.
func TestGiveUpAndBackOff(t *testing.T) {
	cs, _ := casClient(t, readyNode("node-a"), migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 2}))
	prov := newProv(nil, map[string]int{"1g.5gb": 1})
	prov.optimistic = true
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	pod := getPod(t, cs, "p")
	if _, ok := pod.Annotations[AnnotationClaimedBy]; ok {
		t.Fatalf("claim kept after provisioning failed: %v", pod.Annotations)
	}
	if prov.madeCount() != 1 {
		t.Fatalf("made %d, want 1 before running out of room", prov.madeCount())
	}
	prov.mu.Lock()
	prov.room["1g.5gb"] = 1
	prov.mu.Unlock()
	s.now = s.now.Add(10 * time.Second)
	s.pass(t)
	if claimedBy(t, cs, "p") != "" {
		t.Fatal("claimed again during backoff")
	}
	s.now = s.now.Add(s.cfg.Backoff)
	s.pass(t)
	if claimedBy(t, cs, "p") != "node-a" {
		t.Fatal("not claimed again after backoff")
	}
	if prov.IdleCount("1g.5gb") != 2 || prov.madeCount() != 2 {
		t.Fatalf("idle %d made %d; the first instance should be reused, one more made", prov.IdleCount("1g.5gb"), prov.madeCount())
	}
}

func TestOwnClaimNotScheduledIsGivenUp(t *testing.T) {
	p := claimedPod("p", "node-a", t0.Add(-10*time.Minute))
	p.Annotations[AnnotationProvisionedAt] = t0.Add(-4 * time.Minute).Format(time.RFC3339)
	cs, _ := casClient(t, readyNode("node-a"), p)
	s := newTestSource(t, cs, "node-a", newProv(map[string]int{"1g.5gb": 1}, nil))
	s.pass(t)
	if got := claimedBy(t, cs, "p"); got != "" {
		t.Fatalf("claim kept %v after the schedule timeout", got)
	}
}

// After a restart the agent finds its own claims on the pods and serves them.
func TestOwnClaimIsServedAfterRestart(t *testing.T) {
	cs, _ := casClient(t, readyNode("node-a"), claimedPod("p", "node-a", t0.Add(-5*time.Second)))
	prov := newProv(nil, map[string]int{"1g.5gb": 7})
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	if prov.madeCount() != 1 || getPod(t, cs, "p").Annotations[AnnotationProvisionedAt] == "" {
		t.Fatalf("own claim not served: made %d", prov.madeCount())
	}
}

func TestConflictMeansNoProvisioning(t *testing.T) {
	cs, _ := casClient(t, readyNode("node-a"), migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 1}))
	cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), "p", errors.New("someone else was first"))
	})
	prov := newProv(nil, map[string]int{"1g.5gb": 7})
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	if prov.madeCount() != 0 {
		t.Fatalf("made %d instances after losing the claim", prov.madeCount())
	}
}

func TestNodeThatWouldNotBeChosenDoesNotClaim(t *testing.T) {
	p := migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 1})
	p.Spec.NodeSelector = map[string]string{"pool": "gpu-b"}
	cs, patches := casClient(t, readyNode("node-a"), p)
	s := newTestSource(t, cs, "node-a", newProv(nil, map[string]int{"1g.5gb": 7}))
	s.pass(t)
	if *patches != 0 {
		t.Fatal("claimed a pod whose node selector excludes this node")
	}
	// A pod the scheduler nominated to another node (it preempts there) is
	// left to that node.
	nominated := migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 1})
	nominated.Status.NominatedNodeName = "node-b"
	cs4, patches4 := casClient(t, readyNode("node-a"), nominated)
	s4 := newTestSource(t, cs4, "node-a", newProv(nil, map[string]int{"1g.5gb": 7}))
	s4.pass(t)
	if *patches4 != 0 {
		t.Fatal("claimed a pod nominated to another node")
	}
	// A node the API server does not know gives its own claims up...
	cs3, _ := casClient(t, claimedPod("p", "node-a", t0))
	s3 := newTestSource(t, cs3, "node-a", newProv(nil, map[string]int{"1g.5gb": 7}))
	s3.pass(t)
	if got := claimedBy(t, cs3, "p"); got != "" {
		t.Fatalf("an unregistered node kept its claim (claimed-by %q)", got)
	}
	// ...and claims nothing.
	cs2, patches2 := casClient(t, migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 1}))
	s2 := newTestSource(t, cs2, "node-a", newProv(nil, map[string]int{"1g.5gb": 7}))
	s2.pass(t)
	if *patches2 != 0 {
		t.Fatal("an unregistered node claimed a pod")
	}
}

// Run, through the informer: a pod created after start is claimed.
func TestRunWatchesPods(t *testing.T) {
	cs, _ := casClient(t, readyNode("node-a"))
	prov := newProv(nil, map[string]int{"1g.5gb": 7})
	s, err := New(cs, "node-a", prov, WithResources(testResources), WithLogger(quietlog.New()), WithEvents(true))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	if _, err := cs.CoreV1().Pods("default").Create(ctx, migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 1}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for claimedBy(t, cs, "p") != "node-a" || prov.madeCount() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("pod not claimed and served through the watch (made %d)", prov.madeCount())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A pod this node would claim but has no room for is reported as pending
// demand; once room appears and the pod is served, nothing waits.
func TestPendingDemandIsReported(t *testing.T) {
	cs, _ := casClient(t, readyNode("node-a"),
		migPod("small", map[string]int64{"nvidia.com/mig-1g.5gb": 1}),
		migPod("big", map[string]int64{"nvidia.com/mig-3g.20gb": 2}),
		migPod("elsewhere", map[string]int64{"nvidia.com/mig-9g.99gb": 1}))
	prov := newProv(nil, map[string]int{"1g.5gb": 1})
	s := newTestSource(t, cs, "node-a", prov)
	s.pass(t)
	got, n := prov.lastPending()
	if n == 0 || len(got) != 1 || got["3g.20gb"] != 2 {
		t.Fatalf("pending %v after %d reports: want 3g.20gb x2 (the 1g.5gb pod was served, the 9g one is foreign)", got, n)
	}
	if claimedBy(t, cs, "big") != "" {
		t.Fatal("the pod without room was claimed")
	}
	prov.mu.Lock()
	prov.room["3g.20gb"] = 2
	prov.mu.Unlock()
	s.now = s.now.Add(time.Second)
	s.pass(t)
	if got, _ := prov.lastPending(); got != nil {
		t.Fatalf("pending %v once the pod was served, want nil", got)
	}
	if claimedBy(t, cs, "big") != "node-a" {
		t.Fatal("the pod was not claimed once there was room")
	}
}
