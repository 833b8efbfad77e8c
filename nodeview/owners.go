package nodeview

import (
	"context"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// nodePods are the pods of namespace on node, read with the view's own
// identity; each is checked, whatever the API server's selector did.
func (s *Server) nodePods(ctx context.Context, namespace, node string) ([]corev1.Pod, error) {
	list, err := s.reads.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, p := range list.Items {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, nil
}

// ownsPodOnNode says whether the object uid owns a pod of namespace on node.
func (s *Server) ownsPodOnNode(ctx context.Context, namespace string, uid types.UID, node string) (bool, error) {
	pods, err := s.nodePods(ctx, namespace, node)
	if err != nil {
		return false, err
	}
	for _, p := range pods {
		for _, o := range p.OwnerReferences {
			if o.UID == uid {
				return true, nil
			}
		}
	}
	return false, nil
}

// nodeOwner reads the controller name of namespace with get, and returns
// it when it owns a pod on node; else the view's not-visible answer for gr.
func nodeOwner[T metav1.Object](ctx context.Context, s *Server, gr schema.GroupResource, namespace, name, node string,
	get func(context.Context, string, metav1.GetOptions) (T, error)) (T, error) {
	var none T
	obj, err := get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return none, errNotVisible(gr, namespace, name, node)
	}
	if err != nil {
		return none, err
	}
	ok, err := s.ownsPodOnNode(ctx, namespace, obj.GetUID(), node)
	if err != nil {
		return none, err
	}
	if !ok {
		return none, errNotVisible(gr, namespace, name, node)
	}
	return obj, nil
}

// getReplicaSet serves a ReplicaSet that owns a pod on the caller's node
// (readmission keys a recommendation by its Deployment).
func (s *Server) getReplicaSet(ctx context.Context, w http.ResponseWriter, r *http.Request, node string) error {
	ns := r.PathValue("namespace")
	rs, err := nodeOwner(ctx, s, appsv1.Resource("replicasets"), ns, r.PathValue("name"), node, s.reads.AppsV1().ReplicaSets(ns).Get)
	if err != nil {
		return err
	}
	stripMeta(&rs.ObjectMeta)
	stripTemplate(&rs.Spec.Template)
	rs.TypeMeta = metav1.TypeMeta{Kind: "ReplicaSet", APIVersion: "apps/v1"}
	writeJSON(w, http.StatusOK, rs)
	return nil
}

// getJob serves a Job that owns a pod on the caller's node (readmission
// reads its failure policy before it evicts the Job's pod).
func (s *Server) getJob(ctx context.Context, w http.ResponseWriter, r *http.Request, node string) error {
	ns := r.PathValue("namespace")
	job, err := nodeOwner(ctx, s, batchv1.Resource("jobs"), ns, r.PathValue("name"), node, s.reads.BatchV1().Jobs(ns).Get)
	if err != nil {
		return err
	}
	stripMeta(&job.ObjectMeta)
	stripTemplate(&job.Spec.Template)
	job.TypeMeta = metav1.TypeMeta{Kind: "Job", APIVersion: "batch/v1"}
	writeJSON(w, http.StatusOK, job)
	return nil
}

// getNamespace serves a namespace holding a pod on the caller's node, with
// its name and labels only (readmission reads its migpro.dev/readmit-mode
// label).
func (s *Server) getNamespace(ctx context.Context, w http.ResponseWriter, r *http.Request, node string) error {
	name := r.PathValue("name")
	gr := corev1.Resource("namespaces")
	ns, err := s.reads.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return errNotVisible(gr, "", name, node)
	}
	if err != nil {
		return err
	}
	pods, err := s.nodePods(ctx, name, node)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return errNotVisible(gr, "", name, node)
	}
	writeJSON(w, http.StatusOK, &corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: ns.Name, UID: ns.UID, ResourceVersion: ns.ResourceVersion,
			CreationTimestamp: ns.CreationTimestamp, Labels: ns.Labels}})
	return nil
}
