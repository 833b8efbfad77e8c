package agent

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/migpro/migpro/client"
)

// A pod's container marked by the agent's own predictor is handed to
// readmission: its recommendation is stored and the pod is evicted.
func TestMarkedPodIsEvictedForReadmission(t *testing.T) {
	const ns, node = "default", "node-1"
	isController := true
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8b6c4", Namespace: ns, UID: types.UID("rs-uid")}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8b6c4-x2x1z", Namespace: ns, UID: types.UID("pod-uid"),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &isController}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	cs := fake.NewSimpleClientset(rs, pod)

	e := newEnv(t, "a100-40gb")
	e.cfg.PollEvery = 5 * time.Millisecond
	e.cfg.NodeName = node
	a := e.start(t)
	a.startReadmit(cs)
	c := runAgent(t, a)
	r, err := c.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}
	registerWith(t, a.cfg.Socket, map[string]any{"id": "ctr", "pid": 1, "migUUIDs": []string{r.UUID},
		"podNamespace": ns, "podName": pod.Name, "podUID": string(pod.UID), "containerName": "main"})
	if rampUntilMarked(t, e, a, r.UUID, "ctr", nil) == 0 {
		t.Fatal("the pod's container was never marked")
	}
	evictions := func() int {
		n := 0
		for _, act := range cs.Actions() {
			if act.GetVerb() == "create" && act.GetSubresource() == "eviction" {
				n++
			}
		}
		return n
	}
	// The fake clientset records the eviction without acting on it.
	waitFor(t, "an eviction through the Eviction API", func() bool { return evictions() > 0 })
	cms, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(cms.Items) != 1 {
		t.Fatalf("recommendation store: %v %v, want one ConfigMap", cms, err)
	}
	if n := evictions(); n != 1 {
		t.Fatalf("%d evictions, want 1", n)
	}
}
