package demand

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotations a claim writes on the pod.
const (
	// AnnotationClaimedBy names the node that provisions for the pod.
	AnnotationClaimedBy = "migpro.dev/claimed-by"
	// AnnotationClaimedAt is when it claimed the pod (RFC 3339, the
	// claimer's clock).
	AnnotationClaimedAt = "migpro.dev/claimed-at"
	// AnnotationProvisionedAt is when the claimer had idle instances for
	// the whole request; the scheduler is then expected to place the pod.
	AnnotationProvisionedAt = "migpro.dev/provisioned-at"
)

// maxClaimSkew is how far ahead of this node's clock a claim's times may
// be (clocks differ a little) before the claim counts as expired.
const maxClaimSkew = time.Minute

// claim is what a pod's annotations say about who serves it.
type claim struct {
	by            string
	at            time.Time
	provisionedAt time.Time // zero until provisioned
	bad           string    // set when the annotations cannot be read
}

func readClaim(pod *corev1.Pod) claim {
	a := pod.Annotations
	c := claim{by: a[AnnotationClaimedBy]}
	if c.by == "" {
		return c
	}
	var err error
	if c.at, err = time.Parse(time.RFC3339, a[AnnotationClaimedAt]); err != nil {
		c.bad = fmt.Sprintf("%s %q: %v", AnnotationClaimedAt, a[AnnotationClaimedAt], err)
	}
	if v := a[AnnotationProvisionedAt]; v != "" {
		if c.provisionedAt, err = time.Parse(time.RFC3339, v); err != nil {
			c.bad = fmt.Sprintf("%s %q: %v", AnnotationProvisionedAt, v, err)
		}
	}
	return c
}

// expired says whether a claim has outlived its timeouts: not provisioned
// within claimTimeout, or provisioned but still unscheduled after
// scheduleTimeout. The reason is empty when it has not.
func (c claim) expired(now time.Time, claimTimeout, scheduleTimeout time.Duration) string {
	switch {
	case c.bad != "":
		return "unreadable claim: " + c.bad
	case c.at.After(now.Add(maxClaimSkew)) || c.provisionedAt.After(now.Add(maxClaimSkew)):
		// A claim dated in the future would never time out: a node that
		// writes one would stall the pod's provisioning on every node.
		return fmt.Sprintf("%s dated its claim in the future (%s)", c.by, c.at.Format(time.RFC3339))
	case c.provisionedAt.IsZero() && now.Sub(c.at) > claimTimeout:
		return fmt.Sprintf("%s did not provision within %v", c.by, claimTimeout)
	case !c.provisionedAt.IsZero() && now.Sub(c.provisionedAt) > scheduleTimeout:
		return fmt.Sprintf("pod not scheduled %v after %s provisioned", scheduleTimeout, c.by)
	}
	return ""
}

// patchAnnotations sets (or, for a nil value, removes) annotations with a
// JSON merge patch that carries the resourceVersion the decision was made
// on: the API server refuses it with a Conflict if the pod changed since, so
// of two agents claiming the same pod exactly one succeeds.
func (s *Source) patchAnnotations(ctx context.Context, pod *corev1.Pod, set map[string]*string) (*corev1.Pod, error) {
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": pod.ResourceVersion,
		"annotations":     set,
	}}
	body, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encode patch for pod %s: %w", podKey(pod), err)
	}
	out, err := s.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("patch pod %s at resourceVersion %s: %w", podKey(pod), pod.ResourceVersion, err)
	}
	return out, nil
}

func ptr(s string) *string { return &s }

// claimPod writes this node's claim, replacing any stale one.
func (s *Source) claimPod(ctx context.Context, pod *corev1.Pod, now time.Time) (*corev1.Pod, error) {
	return s.patchAnnotations(ctx, pod, map[string]*string{
		AnnotationClaimedBy:     ptr(s.cfg.NodeName),
		AnnotationClaimedAt:     ptr(now.UTC().Format(time.RFC3339)),
		AnnotationProvisionedAt: nil,
	})
}

// markProvisioned records that the instances for the pod exist.
func (s *Source) markProvisioned(ctx context.Context, pod *corev1.Pod, now time.Time) (*corev1.Pod, error) {
	return s.patchAnnotations(ctx, pod, map[string]*string{AnnotationProvisionedAt: ptr(now.UTC().Format(time.RFC3339))})
}

// unclaimPod removes the claim so another node can take the pod.
func (s *Source) unclaimPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return s.patchAnnotations(ctx, pod, map[string]*string{
		AnnotationClaimedBy: nil, AnnotationClaimedAt: nil, AnnotationProvisionedAt: nil,
	})
}

// nodeGone says why a claiming node can no longer serve its claims: it does
// not exist or is not Ready. Errors other than NotFound (say, a Forbidden
// from missing RBAC) leave the node presumed alive, so only the timeouts
// apply. Answers are cached for one pass.
func (s *Source) nodeGone(ctx context.Context, name string, cache map[string]string) string {
	if r, ok := cache[name]; ok {
		return r
	}
	reason := ""
	n, err := s.cfg.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		reason = fmt.Sprintf("claiming node %s is gone", name)
	case err != nil:
		s.log.WithError(err).WithField("node", name).Debug("cannot read the claiming node; only claim timeouts apply")
	case !nodeReady(n):
		reason = fmt.Sprintf("claiming node %s is not Ready", name)
	}
	cache[name] = reason
	return reason
}
