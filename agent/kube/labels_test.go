package kube_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/migpro/migpro/agent/kube"
)

func patches(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "nodes" {
			n++
		}
	}
	return n
}

// The link labels the node once with its GPU facts, removes a stale profile
// label, and a restart with the same GPUs writes nothing.
func TestNodeLabelledOnceWithGPUFacts(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{
		"kubernetes.io/hostname": "node-1", kube.LabelProfile + "9g.99gb": "true"}}}
	cs := fake.NewClientset(node)
	e := newEnv(t)
	e.cfg.Kubeconfig = ""
	if _, err := kube.New(kube.WithClientset(cs))(t.Context(), e.open(t)); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		kube.LabelProduct: "NVIDIA-A100-SXM4-40GB", kube.LabelCount: "1", kube.LabelMIGCapable: "true",
		kube.LabelProfile + "1g.5gb": "true", kube.LabelProfile + "1g.5gb.me": "true", kube.LabelProfile + "7g.40gb": "true",
		"kubernetes.io/hostname": "node-1",
	}
	for k, v := range want {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (all: %v)", k, got.Labels[k], v, got.Labels)
		}
	}
	if _, stale := got.Labels[kube.LabelProfile+"9g.99gb"]; stale {
		t.Error("stale profile label kept")
	}
	if n := patches(cs); n != 1 {
		t.Fatalf("%d node patches, want 1", n)
	}
	// The agent restarts: same facts, no write.
	if _, err := kube.New(kube.WithClientset(cs))(t.Context(), e.open(t)); err != nil {
		t.Fatal(err)
	}
	if n := patches(cs); n != 1 {
		t.Fatalf("%d node patches after a restart, want still 1 (no churn)", n)
	}
}

// Another device plugin advertises nvidia.com/mig-* on a node migpro never
// labelled: the agent refuses to start, in one line.
func TestRefusesBesideAnotherMIGPlugin(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("7")}}}
	cs := fake.NewClientset(node)
	e := newEnv(t)
	_, err := kube.New(kube.WithClientset(cs))(t.Context(), e.open(t))
	if err == nil || !strings.Contains(err.Error(), "another device plugin already advertises nvidia.com/mig-1g.5gb") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err %v, want one line naming the foreign resource", err)
	}
	if n := patches(cs); n != 0 {
		t.Fatalf("node patched %d times by an agent that refused to start", n)
	}
	// migpro's own resources on a node it labelled are not foreign.
	node.Labels = map[string]string{kube.LabelMIGCapable: "true"}
	cs = fake.NewClientset(node)
	if _, err := kube.New(kube.WithClientset(cs))(t.Context(), e.open(t)); err != nil {
		t.Fatalf("migpro's own resources taken as foreign: %v", err)
	}
}

// Without RBAC on nodes the agent still starts.
func TestNodeForbiddenIsNotFatal(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtimeObject, error) {
		return true, nil, errForbidden
	})
	e := newEnv(t)
	if _, err := kube.New(kube.WithClientset(cs))(t.Context(), e.open(t)); err != nil {
		t.Fatal(err)
	}
}

type runtimeObject = runtime.Object

var errForbidden = apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "node-1", errors.New("no RBAC"))
