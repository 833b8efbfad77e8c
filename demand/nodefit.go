package demand

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"
)

// nodeAdmits reports whether the scheduler could place the pod on node once
// the MIG resources are there: the node is schedulable, the pod's node
// selector and required node affinity match it, and the pod tolerates its
// NoSchedule and NoExecute taints. The reason says why not. Claiming a pod
// the scheduler would never put here only delays it.
func nodeAdmits(pod *corev1.Pod, node *corev1.Node) (bool, string) {
	if node.Spec.Unschedulable {
		return false, "node is cordoned"
	}
	for k, v := range pod.Spec.NodeSelector {
		if node.Labels[k] != v {
			return false, fmt.Sprintf("node selector %s=%s does not match", k, v)
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		ok, err := matchNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, node)
		if err != nil {
			return false, fmt.Sprintf("required node affinity: %v", err)
		}
		if !ok {
			return false, "required node affinity does not match"
		}
	}
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		tolerated := false
		for j := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[j].ToleratesTaint(klog.Background(), taint, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return false, fmt.Sprintf("taint %s is not tolerated", taint.ToString())
		}
	}
	return true, ""
}

// matchNodeSelector evaluates a required node selector: the terms are ORed,
// the requirements of one term ANDed. A term with no requirements matches
// nothing, as in the scheduler.
func matchNodeSelector(sel *corev1.NodeSelector, node *corev1.Node) (bool, error) {
	for _, term := range sel.NodeSelectorTerms {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue
		}
		ok, err := matchTerm(term, node)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

func matchTerm(term corev1.NodeSelectorTerm, node *corev1.Node) (bool, error) {
	if len(term.MatchExpressions) > 0 {
		sel, err := requirementsSelector(term.MatchExpressions)
		if err != nil {
			return false, err
		}
		if !sel.Matches(labels.Set(node.Labels)) {
			return false, nil
		}
	}
	if len(term.MatchFields) > 0 {
		sel, err := requirementsSelector(term.MatchFields)
		if err != nil {
			return false, err
		}
		if !sel.Matches(labels.Set{"metadata.name": node.Name}) {
			return false, nil
		}
	}
	return true, nil
}

// requirementsSelector turns node selector requirements into a label
// selector; match fields use it too, against a set holding the one field the
// scheduler supports, metadata.name.
func requirementsSelector(reqs []corev1.NodeSelectorRequirement) (labels.Selector, error) {
	ops := map[corev1.NodeSelectorOperator]selection.Operator{
		corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
		corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
		corev1.NodeSelectorOpGt: selection.GreaterThan, corev1.NodeSelectorOpLt: selection.LessThan,
	}
	sel := labels.NewSelector()
	for _, r := range reqs {
		op, ok := ops[r.Operator]
		if !ok {
			return nil, fmt.Errorf("operator %q", r.Operator)
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*req)
	}
	return sel, nil
}

// nodeReady reports the node's Ready condition.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
