package readmit

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A rule decays after DecayRuns consecutive runs whose peak fits its From;
// a run that does not fit starts the count again.
func TestRecommendationDecaysWhenPeaksFitAgain(t *testing.T) {
	cs, _ := newMarker(t)
	s := Store{Client: cs}
	ctx := context.Background()
	if _, err := s.Record(ctx, ns, testCtrl, Rule{Container: "main", From: res1g, To: res2g}); err != nil {
		t.Fatal(err)
	}
	small := Run{Container: "main", PeakBytes: 3 * gib, FitsFrom: func(from string) bool { return from == res1g }}
	big := Run{Container: "main", PeakBytes: 7 * gib, FitsFrom: func(string) bool { return false }}
	other := Run{Container: "sidecar", PeakBytes: 1, FitsFrom: func(string) bool { return true }}
	for i, run := range []Run{small, small, big, other, small, small} {
		dropped, err := s.RecordRun(ctx, ns, testCtrl, run)
		if err != nil || len(dropped) != 0 {
			t.Fatalf("run %d: dropped %+v %v, want nothing yet", i, dropped, err)
		}
	}
	if rec := storedRecommendation(t, cs); rec == nil || len(rec.Rules) != 1 || rec.Rules[0].FitRuns != 2 {
		t.Fatalf("after 2 fitting runs since the big one: %+v", rec)
	}
	dropped, err := s.RecordRun(ctx, ns, testCtrl, small)
	if err != nil || len(dropped) != 1 || dropped[0].To != res2g {
		t.Fatalf("third fitting run: dropped %+v %v", dropped, err)
	}
	rec := storedRecommendation(t, cs)
	if to, ok := rec.Target("main", res1g); ok {
		t.Fatalf("the rule still applies (%s) after decaying", to)
	}
}

// RecordEnd reads the run's pod for its owner and asks FitsProfile about the
// rule's From by profile name; a run of a pod that is gone, newer or bare
// counts nothing.
func TestRecordEndCountsRunsOfTheOwnersPods(t *testing.T) {
	ctx := context.Background()
	var asked []string
	fits := func(p string) bool { asked = append(asked, p); return true }
	end := RunEnd{PodNamespace: ns, PodName: rsName + "-abcde", PodUID: string(podUID), ContainerName: "main", PeakBytes: gib, FitsProfile: fits}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		adjust func(*RunEnd)
		counts bool
	}{
		{"a pod of the owner", testPod(true), func(*RunEnd) {}, true},
		{"the pod is gone", nil, func(*RunEnd) {}, false},
		{"a newer pod of that name", testPod(true), func(e *RunEnd) { e.PodUID = "older" }, false},
		{"a bare pod", testPod(false), func(*RunEnd) {}, false},
		{"no pod identity", testPod(true), func(e *RunEnd) { e.PodName = "" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.pod != nil {
				objs = append(objs, tc.pod)
			}
			cs, m := newMarker(t, objs...)
			if _, err := (Store{Client: cs}).Record(ctx, ns, testCtrl, Rule{Container: "main", From: res1g, To: res2g}); err != nil {
				t.Fatal(err)
			}
			asked = nil
			e := end
			tc.adjust(&e)
			if _, err := m.RecordEnd(ctx, e); err != nil {
				t.Fatal(err)
			}
			rec := storedRecommendation(t, cs)
			if got := rec.Rules[0].FitRuns == 1; got != tc.counts {
				t.Fatalf("fitRuns %d, want counted %v", rec.Rules[0].FitRuns, tc.counts)
			}
			if tc.counts && (len(asked) != 1 || asked[0] != "1g.5gb") {
				t.Errorf("FitsProfile asked about %q, want the profile 1g.5gb", asked)
			}
		})
	}
}

// Counting a run that drops a rule makes only calls the agent's role allows.
func TestAgentRBACCoversRecordEnd(t *testing.T) {
	role := clusterRole(t, "../deploy/kubernetes/rbac-readmit.yaml", "migpro-agent-readmit")
	cs, view, client, m := newAgentMarker(t, testPod(true), replicaSet(rsName, rsUID))
	ctx := context.Background()
	if _, err := (Store{Client: client, ReadByPatch: true}).Record(ctx, ns, Controller{APIVersion: "apps/v1", Kind: "Deployment", Name: "train", UID: deployUID},
		Rule{Container: "main", From: res1g, To: res2g}); err != nil {
		t.Fatal(err)
	}
	end := RunEnd{PodNamespace: ns, PodName: rsName + "-abcde", ContainerName: "main", PeakBytes: gib, FitsProfile: func(string) bool { return true }}
	var dropped []Rule
	for range DecayRuns {
		var err error
		if dropped, err = m.RecordEnd(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	if len(dropped) != 1 {
		t.Fatalf("dropped %+v after %d fitting runs", dropped, DecayRuns)
	}
	checkActions(t, role, cs)
	checkViewReads(t, view)
	if _, ok := events(t, cs)[ReasonDecayed]; !ok {
		t.Error("no ReadmitDecayed event")
	}
}
