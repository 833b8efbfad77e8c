package readmit

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const jobUID = types.UID("job-uid-1")

// jobPod is testPod owned by Job "train".
func jobPod() *corev1.Pod {
	p := testPod(true)
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: jobUID, Controller: &yes}}
	return p
}

func testJob(backoff, failed int32, ignoreDisruption bool) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns, UID: jobUID},
		Spec: batchv1.JobSpec{BackoffLimit: &backoff}, Status: batchv1.JobStatus{Failed: failed}}
	if ignoreDisruption {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:          batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
		}}}
	}
	return j
}

// A Job pod is evicted only when that cannot fail the Job: its
// podFailurePolicy ignores DisruptionTarget, or a retry is left.
func TestMarkerGuardsTheJobsBackoffLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		job     *batchv1.Job
		evicted bool
		event   string
	}{
		{"policy ignores disruption", testJob(0, 0, true), true, ""},
		{"a retry is left", testJob(2, 1, false), true, "uses one of Job train's 1 retries"},
		{"no retry left", testJob(0, 0, false), false, "evicting would fail Job train"},
		{"last retry used", testJob(3, 3, false), false, "evicting would fail Job train"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, m := newMarker(t, jobPod(), tc.job)
			out, err := m.Handle(context.Background(), testMark())
			if err != nil {
				t.Fatal(err)
			}
			if out.Evicted != tc.evicted || count(cs, "create", "pods", "eviction") != map[bool]int{true: 1, false: 0}[tc.evicted] {
				t.Fatalf("evicted %v (%+v), want %v", out.Evicted, out, tc.evicted)
			}
			evs := events(t, cs)
			all := ""
			for _, e := range evs {
				all += e.Message + "\n"
			}
			if tc.event != "" && !strings.Contains(all, tc.event) {
				t.Errorf("events %q, want one saying %q", all, tc.event)
			}
			// The recommendation is recorded either way: the Job's next pod
			// starts on the larger profile.
			rec, err := Store{Client: cs}.Get(context.Background(), ns, Controller{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: jobUID})
			if err != nil || rec == nil {
				t.Errorf("recommendation %+v %v", rec, err)
			}
		})
	}
}

func TestAgentRBACCoversTheJobCheck(t *testing.T) {
	role := clusterRole(t, "../deploy/kubernetes/rbac-readmit.yaml", "migpro-agent-readmit")
	cs, m := newMarker(t, jobPod(), testJob(0, 0, true))
	if _, err := m.Handle(context.Background(), testMark()); err != nil {
		t.Fatal(err)
	}
	checkActions(t, role, cs)
}
