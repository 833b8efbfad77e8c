package kube_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/agent/kube"
	"github.com/migpro/migpro/client"
)

// Through the running agent and its cluster link: a pending pod this node
// could serve but has no room for shows as pending demand (the partitioner
// is told), and once room is freed the pod is provisioned and nothing waits.
func TestPendingPodIsPendingDemandUntilServed(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	limits := corev1.ResourceList{"nvidia.com/mig-7g.40gb": resource.MustParse("1")}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "default", UID: "uid-big", ResourceVersion: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "x",
			Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	}
	cs := fake.NewClientset(node, pod)
	e := newEnv(t)
	e.cfg.TrackEvery = 20 * time.Millisecond // the demand source's resync period
	a := e.open(t, agent.WithCluster(kube.New(kube.WithClientset(cs))))
	c := client.New(e.cfg.Socket)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// A local holder of a 1g.5gb leaves no room for the 7g.40gb.
	held, err := a.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent run: %v", err)
		}
	}()
	waitFor(t, "the pending pod reported as pending demand", func() bool {
		st, err := c.Status(ctx)
		return err == nil && st.Pending["7g.40gb"] == 1
	})
	// The status answer and the partitioner are updated one after the other:
	// the weights follow within the same resync.
	waitFor(t, "the pending 7g.40gb to weigh more than an unasked 2g.10gb in the partitioner", func() bool {
		w := a.Partitioner().Mix()
		return w["7g.40gb"] > w["2g.10gb"]
	})
	if err := c.Free(ctx, held.CDIName); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod provisioned and nothing pending", func() bool {
		st, err := c.Status(ctx)
		if err != nil || len(st.Pending) != 0 {
			return false
		}
		for _, in := range st.Instances {
			if in.Profile == "7g.40gb" {
				return true
			}
		}
		return false
	})
}
