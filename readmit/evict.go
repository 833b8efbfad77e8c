package readmit

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// DefaultEvictBackoff is how the Marker retries an eviction a
// PodDisruptionBudget refuses (429): 5 s, doubling to at most 2 min, for
// about 15 min in all.
var DefaultEvictBackoff = wait.Backoff{Duration: 5 * time.Second, Factor: 2, Jitter: 0.1, Steps: 12, Cap: 2 * time.Minute}

// evict evicts the pod through the Eviction API (policy/v1), which honours
// PodDisruptionBudgets. A 429 (the budget allows no disruption now) is
// retried with backoff, and so is a 409 while the same pod is still there;
// the first refusal is reported as an Event. A pod already gone, terminating
// or replaced by a newer one of its name counts as evicted.
func (m *Marker) evict(ctx context.Context, pod *corev1.Pod, msg string) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}}
	b := m.backoff
	blocked := 0
	for {
		err := m.client.CoreV1().Pods(pod.Namespace).EvictV1(ctx, ev)
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err):
			return nil // already gone
		case apierrors.IsConflict(err):
			// The UID precondition failed (the pod of that name is a newer
			// one), or the API server lost an update race: look again.
			cur, gerr := m.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(gerr) || gerr == nil && (cur.UID != pod.UID || cur.DeletionTimestamp != nil) {
				return nil
			}
		case apierrors.IsForbidden(err):
			// The eviction guard answers a pod that is gone like a pod
			// elsewhere (it tells nobody which pods exist): look.
			cur, gerr := m.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(gerr) || gerr == nil && cur.UID != pod.UID {
				return nil
			}
			return fmt.Errorf("evict: %w", err)
		case !apierrors.IsTooManyRequests(err):
			return fmt.Errorf("evict: %w", err)
		}
		blocked++
		if blocked == 1 && apierrors.IsTooManyRequests(err) {
			m.event(ctx, pod, corev1.EventTypeWarning, ReasonEvictionBlocked,
				fmt.Sprintf("%s; eviction refused, retrying with backoff: %v", msg, err))
		}
		if b.Steps < 1 {
			return fmt.Errorf("evict: still refused after %d attempts: %w", blocked, err)
		}
		d := b.Step()
		m.log.WithFields(podFields(pod)).WithField("attempt", blocked).WithField("retry_in", d.Round(time.Millisecond).String()).
			WithError(err).Warn("readmit: eviction refused (PodDisruptionBudget?), retrying")
		select {
		case <-ctx.Done():
			return fmt.Errorf("evict: gave up after %d refusals: %w", blocked, ctx.Err())
		case <-time.After(d):
		}
	}
}
