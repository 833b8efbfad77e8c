package nodeview

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	typedbatchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// ReadsThrough is the agent's client when its reads go through the view:
// pods (get, list, watch), ReplicaSets, Jobs and Namespaces (get) are read
// from view; everything else, writes included (patches, evictions, events,
// ConfigMaps, nodes), goes to api.
func ReadsThrough(api, view Reads) Reads {
	return split{
		core:  viewCore{CoreV1Interface: api.CoreV1(), reads: view.CoreV1()},
		apps:  viewApps{AppsV1Interface: api.AppsV1(), reads: view.AppsV1()},
		batch: viewBatch{BatchV1Interface: api.BatchV1(), reads: view.BatchV1()},
	}
}

type split struct {
	core  typedcorev1.CoreV1Interface
	apps  typedappsv1.AppsV1Interface
	batch typedbatchv1.BatchV1Interface
}

func (s split) CoreV1() typedcorev1.CoreV1Interface    { return s.core }
func (s split) AppsV1() typedappsv1.AppsV1Interface    { return s.apps }
func (s split) BatchV1() typedbatchv1.BatchV1Interface { return s.batch }

type viewCore struct {
	typedcorev1.CoreV1Interface
	reads typedcorev1.CoreV1Interface
}

func (c viewCore) Pods(ns string) typedcorev1.PodInterface {
	return viewPods{PodInterface: c.CoreV1Interface.Pods(ns), reads: c.reads.Pods(ns)}
}

func (c viewCore) Namespaces() typedcorev1.NamespaceInterface {
	return viewNamespaces{NamespaceInterface: c.CoreV1Interface.Namespaces(), reads: c.reads.Namespaces()}
}

type viewPods struct {
	typedcorev1.PodInterface
	reads typedcorev1.PodInterface
}

func (p viewPods) Get(ctx context.Context, name string, o metav1.GetOptions) (*corev1.Pod, error) {
	return p.reads.Get(ctx, name, o)
}

func (p viewPods) List(ctx context.Context, o metav1.ListOptions) (*corev1.PodList, error) {
	return p.reads.List(ctx, o)
}

func (p viewPods) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return p.reads.Watch(ctx, o)
}

type viewNamespaces struct {
	typedcorev1.NamespaceInterface
	reads typedcorev1.NamespaceInterface
}

func (n viewNamespaces) Get(ctx context.Context, name string, o metav1.GetOptions) (*corev1.Namespace, error) {
	return n.reads.Get(ctx, name, o)
}

type viewApps struct {
	typedappsv1.AppsV1Interface
	reads typedappsv1.AppsV1Interface
}

func (a viewApps) ReplicaSets(ns string) typedappsv1.ReplicaSetInterface {
	return viewReplicaSets{ReplicaSetInterface: a.AppsV1Interface.ReplicaSets(ns), reads: a.reads.ReplicaSets(ns)}
}

type viewReplicaSets struct {
	typedappsv1.ReplicaSetInterface
	reads typedappsv1.ReplicaSetInterface
}

func (r viewReplicaSets) Get(ctx context.Context, name string, o metav1.GetOptions) (*appsv1.ReplicaSet, error) {
	return r.reads.Get(ctx, name, o)
}

type viewBatch struct {
	typedbatchv1.BatchV1Interface
	reads typedbatchv1.BatchV1Interface
}

func (b viewBatch) Jobs(ns string) typedbatchv1.JobInterface {
	return viewJobs{JobInterface: b.BatchV1Interface.Jobs(ns), reads: b.reads.Jobs(ns)}
}

type viewJobs struct {
	typedbatchv1.JobInterface
	reads typedbatchv1.JobInterface
}

func (j viewJobs) Get(ctx context.Context, name string, o metav1.GetOptions) (*batchv1.Job, error) {
	return j.reads.Get(ctx, name, o)
}
