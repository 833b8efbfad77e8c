package demand

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ctr(req, lim map[string]int64) corev1.Container {
	conv := func(m map[string]int64) corev1.ResourceList {
		if m == nil {
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range m {
			out[corev1.ResourceName(k)] = *resource.NewQuantity(v, resource.DecimalSI)
		}
		return out
	}
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: conv(req), Limits: conv(lim)}}
}

func TestPodNeed(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := ctr(nil, map[string]int64{"nvidia.com/mig-1g.5gb": 1})
	sidecar.RestartPolicy = &always
	cases := []struct {
		name    string
		spec    corev1.PodSpec
		need    Need
		foreign []string
	}{
		{"limits only", corev1.PodSpec{Containers: []corev1.Container{ctr(nil, map[string]int64{"nvidia.com/mig-1g.5gb": 2})}},
			Need{"1g.5gb": 2}, nil},
		{"plus written as dot", corev1.PodSpec{Containers: []corev1.Container{ctr(map[string]int64{"nvidia.com/mig-1g.10gb.me": 1}, nil)}},
			Need{"1g.10gb+me": 1}, nil},
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{
			ctr(nil, map[string]int64{"nvidia.com/mig-1g.5gb": 1, "cpu": 2}),
			ctr(nil, map[string]int64{"nvidia.com/mig-1g.5gb": 1, "nvidia.com/mig-3g.20gb": 1})}},
			Need{"1g.5gb": 2, "3g.20gb": 1}, nil},
		{"init container peak wins", corev1.PodSpec{
			InitContainers: []corev1.Container{ctr(nil, map[string]int64{"nvidia.com/mig-1g.5gb": 3})},
			Containers:     []corev1.Container{ctr(nil, map[string]int64{"nvidia.com/mig-1g.5gb": 1})}},
			Need{"1g.5gb": 3}, nil},
		{"sidecar adds to app containers", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar},
			Containers:     []corev1.Container{ctr(nil, map[string]int64{"nvidia.com/mig-1g.5gb": 1})}},
			Need{"1g.5gb": 2}, nil},
		{"foreign profile", corev1.PodSpec{Containers: []corev1.Container{ctr(nil, map[string]int64{"nvidia.com/mig-7g.80gb": 1})}},
			Need{}, []string{"nvidia.com/mig-7g.80gb"}},
		{"no MIG", corev1.PodSpec{Containers: []corev1.Container{ctr(nil, map[string]int64{"nvidia.com/gpu": 1})}},
			Need{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			need, foreign := podNeed(&corev1.Pod{Spec: c.spec}, "nvidia.com", testResources)
			if !reflect.DeepEqual(need, c.need) || !reflect.DeepEqual(foreign, c.foreign) {
				t.Fatalf("need %v foreign %v, want %v %v", need, foreign, c.need, c.foreign)
			}
		})
	}
}

func TestUnschedulableAndPending(t *testing.T) {
	p := migPod("p", nil)
	if !unschedulable(p) || !pending(p) {
		t.Fatal("the test pod should be pending and unschedulable")
	}
	p.Status.Conditions[0].Reason = "SchedulerError"
	if unschedulable(p) {
		t.Error("a scheduler error is not unschedulable")
	}
	p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}
	if unschedulable(p) {
		t.Error("a scheduled pod is not unschedulable")
	}
	p.Spec.NodeName = "n"
	if pending(p) {
		t.Error("a pod with a node is not pending for us")
	}
	q := migPod("q", nil)
	q.Status.Phase = corev1.PodFailed
	if pending(q) {
		t.Error("a failed pod is not pending")
	}
}

func TestNodeAdmits(t *testing.T) {
	node := readyNode("node-a")
	node.Labels["pool"] = "gpu"
	node.Labels["gen"] = "8"
	node.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
	tol := []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	affinity := func(field bool, op corev1.NodeSelectorOperator, key string, vals ...string) *corev1.Affinity {
		term := corev1.NodeSelectorTerm{}
		req := []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: vals}}
		if field {
			term.MatchFields = req
		} else {
			term.MatchExpressions = req
		}
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}}}
	}
	cases := []struct {
		name string
		spec corev1.PodSpec
		want bool
	}{
		{"tolerated, no constraints", corev1.PodSpec{Tolerations: tol}, true},
		{"taint not tolerated", corev1.PodSpec{}, false},
		{"selector matches", corev1.PodSpec{Tolerations: tol, NodeSelector: map[string]string{"pool": "gpu"}}, true},
		{"selector differs", corev1.PodSpec{Tolerations: tol, NodeSelector: map[string]string{"pool": "cpu"}}, false},
		{"affinity In", corev1.PodSpec{Tolerations: tol, Affinity: affinity(false, corev1.NodeSelectorOpIn, "pool", "gpu", "x")}, true},
		{"affinity NotIn", corev1.PodSpec{Tolerations: tol, Affinity: affinity(false, corev1.NodeSelectorOpNotIn, "pool", "gpu")}, false},
		{"affinity Gt", corev1.PodSpec{Tolerations: tol, Affinity: affinity(false, corev1.NodeSelectorOpGt, "gen", "7")}, true},
		{"affinity Lt", corev1.PodSpec{Tolerations: tol, Affinity: affinity(false, corev1.NodeSelectorOpLt, "gen", "7")}, false},
		{"affinity field name", corev1.PodSpec{Tolerations: tol, Affinity: affinity(true, corev1.NodeSelectorOpIn, "metadata.name", "node-a")}, true},
		{"affinity other name", corev1.PodSpec{Tolerations: tol, Affinity: affinity(true, corev1.NodeSelectorOpIn, "metadata.name", "node-b")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, why := nodeAdmits(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: c.spec}, node)
			if ok != c.want {
				t.Fatalf("admits = %v (%s), want %v", ok, why, c.want)
			}
		})
	}
	cordoned := node.DeepCopy()
	cordoned.Spec.Unschedulable = true
	if ok, _ := nodeAdmits(&corev1.Pod{Spec: corev1.PodSpec{Tolerations: tol}}, cordoned); ok {
		t.Fatal("a cordoned node admits nothing")
	}
}
