package readmit

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jobEvictionCost says what evicting a Job's pod costs the Job. An evicted
// pod fails, and a failed pod counts against the Job's backoffLimit unless
// the Job's podFailurePolicy ignores pods carrying the DisruptionTarget
// condition, which the Eviction API sets. It returns "" when the eviction is
// free (the policy ignores it), and otherwise the reason it must not happen
// (it would exhaust the backoffLimit) or, with ok true, a note that it uses
// up one retry.
func (m *Marker) jobEvictionCost(ctx context.Context, pod *corev1.Pod, c Controller) (note string, ok bool, err error) {
	job, err := m.client.BatchV1().Jobs(pod.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return "", false, fmt.Errorf("read Job %s/%s: %w", pod.Namespace, c.Name, err)
	}
	if job.UID != c.UID {
		return "", false, fmt.Errorf("job %s/%s is a newer one than the pod's", pod.Namespace, c.Name)
	}
	if IgnoresDisruption(job) {
		return "", true, nil
	}
	limit := int32(6) // the API's default
	if job.Spec.BackoffLimit != nil {
		limit = *job.Spec.BackoffLimit
	}
	if job.Status.Failed+1 > limit {
		return fmt.Sprintf("evicting would fail Job %s: %d of its backoffLimit %d failures are used and its podFailurePolicy does not ignore DisruptionTarget",
			c.Name, job.Status.Failed, limit), false, nil
	}
	return fmt.Sprintf("the eviction uses one of Job %s's %d retries (add a podFailurePolicy rule ignoring DisruptionTarget to make it free)",
		c.Name, limit-job.Status.Failed), true, nil
}

// IgnoresDisruption reports whether the Job's podFailurePolicy has an Ignore
// rule matching the DisruptionTarget condition: its evicted pods then do
// not count against the backoffLimit.
func IgnoresDisruption(job *batchv1.Job) bool {
	if job.Spec.PodFailurePolicy == nil {
		return false
	}
	for _, r := range job.Spec.PodFailurePolicy.Rules {
		if r.Action != batchv1.PodFailurePolicyActionIgnore {
			continue
		}
		for _, p := range r.OnPodConditions {
			if p.Type == corev1.DisruptionTarget && (p.Status == "" || p.Status == corev1.ConditionTrue) {
				return true
			}
		}
	}
	return false
}
