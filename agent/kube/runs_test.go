package kube_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/readmit"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

const (
	res1g5  = "nvidia.com/mig-1g.5gb"
	res2g10 = "nvidia.com/mig-2g.10gb"
)

// A workload moved from 1g.5gb to 2g.10gb whose runs on the 2g.10gb end,
// as the running agent sees them, with peaks that fit the 1g.5gb again:
// each counts, a run that does not fit starts the count over, and after
// readmit.DecayRuns fitting runs in a row the recommendation is dropped.
func TestFinishedRunsDecayTheRecommendation(t *testing.T) {
	const ns = "default"
	yes := true
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8b6c4", Namespace: ns, UID: "rs-uid"}}
	ctrl := readmit.Controller{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{res2g10: resource.MustParse("1")}}}}},
		}
	}
	names := []string{"web-7d9f8b6c4-aaaaa", "web-7d9f8b6c4-bbbbb", "web-7d9f8b6c4-ccccc", "web-7d9f8b6c4-ddddd", "web-7d9f8b6c4-eeeee"}
	cs := fake.NewClientset(rs)
	for _, n := range names {
		if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	store := readmit.Store{Client: cs}
	if _, err := store.Record(context.Background(), ns, ctrl, readmit.Rule{Container: "main", From: res1g5, To: res2g10}); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	a, c := e.runLinked(t, cs)
	ctx := context.Background()
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "2g.10gb"})
	if err != nil {
		t.Fatal(err)
	}
	in, err := a.Partitioner().Find(r.UUID)
	if err != nil {
		t.Fatal(err)
	}

	// run is one container of pod name on the 2g.10gb, peaking at peak,
	// from its registration to its end.
	run := func(name string, peak uint64) {
		t.Helper()
		e.node.SetInstanceMemoryUsed(in.GPU, in.GIID, peak)
		id := "ctr-" + name
		if _, err := c.Register(ctx, telemetryapi.Registration{ID: id, PID: 1, MIGUUIDs: []string{r.UUID},
			PodNamespace: ns, PodName: name, PodUID: "uid-" + name, ContainerName: "main"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the peak of "+name, func() bool {
			top, err := c.Top(ctx)
			return err == nil && len(top.Containers) == 1 && top.Containers[0].PeakBytes == peak
		})
		deregister(t, e.cfg.Socket, id)
	}
	fitRuns := func() (int, bool) {
		rec, err := store.Get(ctx, ns, ctrl)
		if err != nil || rec == nil || len(rec.Rules) == 0 {
			return 0, false
		}
		return rec.Rules[0].FitRuns, true
	}
	waitRuns := func(want int) {
		t.Helper()
		waitFor(t, "the run to be counted", func() bool { n, ok := fitRuns(); return ok && n == want })
	}

	small, big := uint64(2)<<30, uint64(6)<<30 // 2 GiB fits a 1g.5gb with the margin; 6 GiB does not
	run(names[0], small)
	waitRuns(1)
	run(names[1], big)
	waitRuns(0)
	run(names[2], small)
	waitRuns(1)
	run(names[3], small)
	waitRuns(2)
	run(names[4], small)
	waitFor(t, "the recommendation to decay", func() bool { _, ok := fitRuns(); return !ok })

	// The Event follows the store's update: wait for it, then check there is
	// exactly one.
	decayEvents := func() []corev1.Event {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []corev1.Event
		for _, ev := range evs.Items {
			if ev.Reason == readmit.ReasonDecayed {
				out = append(out, ev)
			}
		}
		return out
	}
	waitFor(t, "the "+readmit.ReasonDecayed+" event", func() bool { return len(decayEvents()) > 0 })
	evs := decayEvents()
	if len(evs) != 1 {
		t.Fatalf("%d %s events, want 1", len(evs), readmit.ReasonDecayed)
	}
	if ev := evs[0]; ev.InvolvedObject.Name != names[4] || !strings.Contains(ev.Message, res1g5) {
		t.Errorf("decay event %+v", ev)
	}
}

// deregister ends container id as its poststop hook does.
func deregister(t *testing.T, socket, id string) {
	t.Helper()
	hc := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}, Timeout: 5 * time.Second}
	req, err := http.NewRequest(http.MethodDelete, "http://agent"+client.PathContainers+"/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		t.Fatalf("deregister %s: %s %v", id, resp.Status, body)
	}
}
