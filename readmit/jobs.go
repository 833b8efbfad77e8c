package readmit

import (
	"context"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jobEvictionCost says whether a Job's pod may be evicted. An evicted pod
// fails, and a failed pod counts against the Job's backoffLimit unless the
// first rule of the Job's podFailurePolicy that matches it says Ignore. The
// Marker evicts only then: readmission never uses up a Job's retry. It
// returns "" when the eviction is free, and otherwise why the pod is left
// running.
func (m *Marker) jobEvictionCost(ctx context.Context, pod *corev1.Pod, c Controller) (string, error) {
	job, err := m.client.BatchV1().Jobs(pod.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read Job %s/%s: %w", pod.Namespace, c.Name, err)
	}
	if job.UID != c.UID {
		return "", fmt.Errorf("job %s/%s is a newer one than the pod's", pod.Namespace, c.Name)
	}
	free, why := evictionIgnored(job, pod)
	if free {
		return "", nil
	}
	limit := int32(6) // the API's default
	if job.Spec.BackoffLimit != nil {
		limit = *job.Spec.BackoffLimit
	}
	return fmt.Sprintf("evicting would count against Job %s's backoffLimit (%d, %d used): its podFailurePolicy does not ignore DisruptionTarget (%s); add a first rule with action Ignore on the DisruptionTarget condition",
		c.Name, limit, job.Status.Failed, why), nil
}

// IgnoresDisruption reports whether the Job's podFailurePolicy ignores pod
// once the Eviction API has evicted it, so that it does not count against
// the backoffLimit. The Job controller applies the first rule that matches a
// failed pod; evictionIgnored says what that rule may be. pod may be nil
// when it is not known: any rule on a condition other than DisruptionTarget
// then may match.
func IgnoresDisruption(job *batchv1.Job, pod *corev1.Pod) bool {
	free, _ := evictionIgnored(job, pod)
	return free
}

// evictionExitCodes are the exit codes of a container stopped by the
// eviction: SIGTERM's, or SIGKILL's after the grace period. A container
// that handles SIGTERM may exit with 0, which no rule matches.
var evictionExitCodes = []int32{128 + 15, 128 + 9}

// terminationConditions are the pod conditions the kubelet changes when it
// stops the pod's containers; their status at the failure is not known
// before the eviction.
var terminationConditions = []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady, corev1.PodReadyToStartContainers}

// evictionIgnored walks the Job's podFailurePolicy rules in order, as the
// Job controller does, against the pod as it will fail once evicted: with
// the condition DisruptionTarget=True, its other conditions (pod's, when
// known), and containers killed by a signal. The eviction is free when an
// Ignore rule certainly matches before any rule of another action may. An
// Ignore rule that only may match decides nothing and the walk goes on; a
// rule of another action that may match makes the eviction count. why says
// which rule decided.
func evictionIgnored(job *batchv1.Job, pod *corev1.Pod) (free bool, why string) {
	if job.Spec.PodFailurePolicy == nil || len(job.Spec.PodFailurePolicy.Rules) == 0 {
		return false, "it has none"
	}
	for i, r := range job.Spec.PodFailurePolicy.Rules {
		switch r.Action {
		case batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionFailJob,
			batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionCount:
		default:
			continue // the API: an unknown action skips the rule
		}
		certain, possible := ruleMatchesEviction(r, pod)
		switch {
		case r.Action == batchv1.PodFailurePolicyActionIgnore && certain:
			return true, ""
		case r.Action != batchv1.PodFailurePolicyActionIgnore && possible:
			return false, fmt.Sprintf("rule %d, %s, may match the evicted pod first", i+1, r.Action)
		}
	}
	return false, "no rule ignores it, so it counts"
}

// ruleMatchesEviction says whether rule r matches the evicted pod for
// certain, or only may (its exit codes, or a condition whose status the
// termination changes).
func ruleMatchesEviction(r batchv1.PodFailurePolicyRule, pod *corev1.Pod) (certain, possible bool) {
	if e := r.OnExitCodes; e != nil {
		for _, code := range evictionExitCodes {
			in := slices.Contains(e.Values, code)
			if (e.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) ||
				(e.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
				possible = true // the application may exit otherwise
			}
		}
		return false, possible
	}
	for _, p := range r.OnPodConditions {
		status := p.Status
		if status == "" {
			status = corev1.ConditionTrue // the API's default
		}
		switch {
		case p.Type == corev1.DisruptionTarget:
			if status == corev1.ConditionTrue {
				return true, true
			}
		case slices.Contains(terminationConditions, p.Type):
			possible = true
		case pod == nil:
			possible = true // the pod's conditions are not known
		case hasCondition(pod, p.Type, status):
			// A condition the pod already has stays at its failure.
			return true, true
		}
	}
	return false, possible
}

func hasCondition(pod *corev1.Pod, typ corev1.PodConditionType, status corev1.ConditionStatus) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ && c.Status == status {
			return true
		}
	}
	return false
}
