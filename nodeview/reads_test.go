package nodeview_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/migpro/migpro/nodeview"
)

// With the node view the agent reads pods, ReplicaSets, Jobs and
// Namespaces there and nowhere else, and writes to the API server.
func TestReadsThroughTheViewWritesToTheAPIServer(t *testing.T) {
	mk := func(where string) *fake.Clientset {
		meta := func(name string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"from": where}}
		}
		return fake.NewClientset(&corev1.Pod{ObjectMeta: meta("p")}, &appsv1.ReplicaSet{ObjectMeta: meta("rs")},
			&batchv1.Job{ObjectMeta: meta("j")}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"from": where}}})
	}
	api, view := mk("api"), mk("view")
	cs := nodeview.ReadsThrough(api, view)
	ctx := context.Background()
	from := func(what string, l map[string]string, err error) {
		t.Helper()
		if err != nil || l["from"] != "view" {
			t.Errorf("%s: read from %q (%v), want the view", what, l["from"], err)
		}
	}
	p, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	from("pod get", p.GetLabels(), err)
	pl, err := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil || len(pl.Items) != 1 {
		t.Fatalf("pod list: %v %v", pl, err)
	}
	from("pod list", pl.Items[0].Labels, nil)
	w, err := cs.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	rs, err := cs.AppsV1().ReplicaSets("ns").Get(ctx, "rs", metav1.GetOptions{})
	from("ReplicaSet get", rs.GetLabels(), err)
	j, err := cs.BatchV1().Jobs("ns").Get(ctx, "j", metav1.GetOptions{})
	from("Job get", j.GetLabels(), err)
	n, err := cs.CoreV1().Namespaces().Get(ctx, "ns", metav1.GetOptions{})
	from("Namespace get", n.GetLabels(), err)

	if _, err := cs.CoreV1().Pods("ns").Patch(ctx, "p", types.MergePatchType, []byte(`{"metadata":{"annotations":{"migpro.dev/x":"1"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ := api.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	if got.Annotations["migpro.dev/x"] != "1" {
		t.Error("the patch did not reach the API server")
	}
	for _, a := range view.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("the view was asked to %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if len(api.Actions()) != 2 { // the patch, and this test's get
		t.Errorf("the API server saw %d actions, want the patch and the test's get: %v", len(api.Actions()), api.Actions())
	}
}
