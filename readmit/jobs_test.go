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
		{"policy ignores disruption, every retry used", testJob(3, 3, true), true, ""},
		// Without the rule an eviction would use up a retry: the issue's
		// promise is that readmission never does.
		{"a retry is left", testJob(2, 1, false), false, "would count against Job train's backoffLimit (2, 1 used)"},
		{"no retry left", testJob(0, 0, false), false, "would count against Job train's backoffLimit (0, 0 used)"},
		{"last retry used", testJob(3, 3, false), false, "podFailurePolicy does not ignore DisruptionTarget"},
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

func exitCodes(op batchv1.PodFailurePolicyOnExitCodesOperator, values ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: values}}
}

func onCondition(typ corev1.PodConditionType, status corev1.ConditionStatus) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: typ, Status: status}}}
}

func act(a batchv1.PodFailurePolicyAction, r batchv1.PodFailurePolicyRule) batchv1.PodFailurePolicyRule {
	r.Action = a
	return r
}

// The Job controller applies the first podFailurePolicy rule that matches
// a failed pod. An evicted pod carries DisruptionTarget=True, is no longer
// Ready, and its containers exit on SIGTERM (143) or SIGKILL (137): the
// eviction is free only when the first rule such a pod can match ignores it.
func TestJobPodFailurePolicyRulesApplyInOrder(t *testing.T) {
	const (
		ignore = batchv1.PodFailurePolicyActionIgnore
		fail   = batchv1.PodFailurePolicyActionFailJob
		cnt    = batchv1.PodFailurePolicyActionCount
		index  = batchv1.PodFailurePolicyActionFailIndex
	)
	disruption := onCondition(corev1.DisruptionTarget, corev1.ConditionTrue)
	for _, tc := range []struct {
		name  string
		rules []batchv1.PodFailurePolicyRule
		free  bool
	}{
		{"only the ignore rule", []batchv1.PodFailurePolicyRule{act(ignore, disruption)}, true},
		{"FailJob on DisruptionTarget first", []batchv1.PodFailurePolicyRule{act(fail, disruption), act(ignore, disruption)}, false},
		{"Count on DisruptionTarget first", []batchv1.PodFailurePolicyRule{act(cnt, disruption), act(ignore, disruption)}, false},
		{"FailIndex on DisruptionTarget first", []batchv1.PodFailurePolicyRule{act(index, disruption), act(ignore, disruption)}, false},
		{"FailJob on any other exit code first", []batchv1.PodFailurePolicyRule{act(fail, exitCodes(batchv1.PodFailurePolicyOnExitCodesOpNotIn, 42)), act(ignore, disruption)}, false},
		{"Count on SIGTERM's exit code first", []batchv1.PodFailurePolicyRule{act(cnt, exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 143)), act(ignore, disruption)}, false},
		{"FailJob on the pod losing Ready first", []batchv1.PodFailurePolicyRule{act(fail, onCondition(corev1.PodReady, corev1.ConditionFalse)), act(ignore, disruption)}, false},
		// The Kubernetes documentation's example: an application's own exit
		// code fails the Job, a disruption is ignored.
		{"FailJob on exit code 42 first", []batchv1.PodFailurePolicyRule{act(fail, exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 42)), act(ignore, disruption)}, true},
		{"FailJob on a condition the pod lacks first", []batchv1.PodFailurePolicyRule{act(fail, onCondition("ConfigIssue", corev1.ConditionTrue)), act(ignore, disruption)}, true},
		{"an unknown action is skipped", []batchv1.PodFailurePolicyRule{act("Retry", disruption), act(ignore, disruption)}, true},
		{"an unknown operator does not match", []batchv1.PodFailurePolicyRule{act(fail, exitCodes("Between", 1, 255)), act(ignore, disruption)}, true},
		// An Ignore that may not match decides nothing: the next rule does.
		{"Ignore on SIGTERM's exit code, then Count", []batchv1.PodFailurePolicyRule{act(ignore, exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 143)), act(cnt, disruption)}, false},
		{"Ignore on DisruptionTarget=False", []batchv1.PodFailurePolicyRule{act(ignore, onCondition(corev1.DisruptionTarget, corev1.ConditionFalse))}, false},
		{"no rule matches", []batchv1.PodFailurePolicyRule{act(fail, exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 42))}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob(0, 0, false)
			job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: tc.rules}
			cs, m := newMarker(t, jobPod(), job)
			out, err := m.Handle(context.Background(), testMark())
			if err != nil {
				t.Fatal(err)
			}
			if out.Evicted != tc.free || count(cs, "create", "pods", "eviction") != map[bool]int{true: 1, false: 0}[tc.free] {
				t.Fatalf("evicted %v (%+v), want %v", out.Evicted, out, tc.free)
			}
			if !tc.free && !strings.Contains(events(t, cs)[ReasonNotEvicted].Message, "backoffLimit") {
				t.Errorf("ReadmitNotEvicted event %q, want the backoffLimit named", events(t, cs)[ReasonNotEvicted].Message)
			}
			if got := IgnoresDisruption(job, jobPod()); got != tc.free {
				t.Errorf("IgnoresDisruption %v, want %v", got, tc.free)
			}
		})
	}
}

func TestAgentRBACCoversTheJobCheck(t *testing.T) {
	role := clusterRole(t, "../deploy/kubernetes/rbac-readmit.yaml", "migpro-agent-readmit")
	cs, view, _, m := newAgentMarker(t, jobPod(), testJob(0, 0, true))
	if _, err := m.Handle(context.Background(), testMark()); err != nil {
		t.Fatal(err)
	}
	checkActions(t, role, cs)
	checkViewReads(t, view)
}

// A rule on a condition the pod already has matches it at its failure too;
// with the pod unknown, any such rule may match.
func TestIgnoresDisruptionReadsThePodsConditions(t *testing.T) {
	job := testJob(0, 0, false)
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		act(batchv1.PodFailurePolicyActionFailJob, onCondition("ConfigIssue", corev1.ConditionTrue)),
		act(batchv1.PodFailurePolicyActionIgnore, onCondition(corev1.DisruptionTarget, ""))}}
	pod := jobPod()
	if !IgnoresDisruption(job, pod) {
		t.Error("the pod has no ConfigIssue: the Ignore rule decides")
	}
	if IgnoresDisruption(job, nil) {
		t.Error("pod unknown: the FailJob rule may match first")
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: "ConfigIssue", Status: corev1.ConditionTrue}}
	if IgnoresDisruption(job, pod) {
		t.Error("the pod has ConfigIssue: the FailJob rule matches first")
	}
}
