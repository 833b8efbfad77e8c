package demand

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Need is how many instances of each profile a pod asks for.
type Need map[string]int

// Profiles lists the profiles of a need in a stable order.
func (n Need) Profiles() []string {
	out := make([]string, 0, len(n))
	for p := range n {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// add adds another need to n.
func (n Need) add(o Need) {
	for prof, k := range o {
		n[prof] += k
	}
}

func (n Need) String() string {
	parts := make([]string, 0, len(n))
	for _, p := range n.Profiles() {
		parts = append(parts, fmt.Sprintf("%s x%d", p, n[p]))
	}
	return strings.Join(parts, ", ")
}

// podNeed reads what a pod asks of MIG resources under domain: the effective
// request the scheduler uses (the sum over app and sidecar containers, or the
// largest init container plus the sidecars started before it, whichever is
// larger). Resources under <domain>/mig- that resources does not map to a
// profile are returned in foreign: this node cannot serve such a pod.
func podNeed(pod *corev1.Pod, domain string, resources map[corev1.ResourceName]string) (need Need, foreign []string) {
	prefix := domain + "/mig-"
	counts := map[corev1.ResourceName]int64{}
	sidecars := map[corev1.ResourceName]int64{}
	initPeak := map[corev1.ResourceName]int64{}
	for _, c := range pod.Spec.InitContainers {
		req := migQuantities(c, prefix)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			for r, v := range req {
				sidecars[r] += v
			}
			continue
		}
		for r, v := range req {
			if t := v + sidecars[r]; t > initPeak[r] {
				initPeak[r] = t
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		for r, v := range migQuantities(c, prefix) {
			counts[r] += v
		}
	}
	for r, v := range sidecars {
		counts[r] += v
	}
	for r, v := range initPeak {
		if v > counts[r] {
			counts[r] = v
		}
	}
	need = Need{}
	for r, v := range counts {
		if v <= 0 {
			continue
		}
		profile, ok := resources[r]
		if !ok {
			foreign = append(foreign, string(r))
			continue
		}
		need[profile] += int(v)
	}
	sort.Strings(foreign)
	return need, foreign
}

// migQuantities is a container's requests of resources starting with
// prefix. Extended resources must have requests equal to limits; the API
// server copies limits into missing requests, but a pod object built by hand
// may carry limits only, so those count too.
func migQuantities(c corev1.Container, prefix string) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for r, q := range c.Resources.Limits {
		if strings.HasPrefix(string(r), prefix) {
			out[r] = q.Value()
		}
	}
	for r, q := range c.Resources.Requests {
		if strings.HasPrefix(string(r), prefix) {
			out[r] = q.Value()
		}
	}
	return out
}

// unschedulable reports whether the scheduler tried the pod and found no
// node: PodScheduled=False with reason Unschedulable.
func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// pending reports whether the pod still waits for a node.
func pending(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.Status.Phase == corev1.PodPending && pod.DeletionTimestamp == nil
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
