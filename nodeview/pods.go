package nodeview

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/demand"
)

var podsResource = corev1.Resource("pods")

// scope is which pods a list or watch may see.
type scope int

const (
	onNode  scope = iota // spec.nodeName=<the caller's node>
	pending              // demand.PendingSelector, and asking for MIG
)

// podScope reads the field selector of a list or watch: the caller's node,
// or pending pods; anything else is refused.
func podScope(selector, node string) (scope, string, error) {
	refuse := func(why string) (scope, string, error) {
		return 0, "", errForbidden(fmt.Sprintf("pods may be listed or watched only with the field selector spec.nodeName=%s or %s; %s", node, demand.PendingSelector, why))
	}
	if strings.TrimSpace(selector) == "" {
		return refuse("none was given")
	}
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return refuse(fmt.Sprintf("%q does not parse: %v", selector, err))
	}
	got := map[string]string{}
	for _, r := range sel.Requirements() {
		if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
			return refuse(fmt.Sprintf("%q uses %s", selector, r.Operator))
		}
		if _, dup := got[r.Field]; dup {
			return refuse(fmt.Sprintf("%q names %s twice", selector, r.Field))
		}
		got[r.Field] = r.Value
	}
	switch {
	case len(got) == 1 && got["spec.nodeName"] == node:
		return onNode, "spec.nodeName=" + node, nil
	case len(got) == 2 && got["status.phase"] == string(corev1.PodPending) && hasEmpty(got, "spec.nodeName"):
		return pending, demand.PendingSelector, nil
	}
	return refuse(fmt.Sprintf("%q was given", selector))
}

func hasEmpty(m map[string]string, k string) bool {
	v, ok := m[k]
	return ok && v == ""
}

// asksForMIG says whether a container or init container of p requests or
// limits one of the domain's MIG resources.
func (s *Server) asksForMIG(p *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name := range l {
					if defaults.IsMIGResource(s.domain, string(name)) {
						return true
					}
				}
			}
		}
	}
	return false
}

// isPending is a pod no node runs yet, still pending.
func isPending(p *corev1.Pod) bool {
	return p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending
}

// inScope says whether the caller sees p in a list or watch of scope sc.
func (s *Server) inScope(p *corev1.Pod, sc scope, node string) bool {
	if sc == onNode {
		return p.Spec.NodeName == node
	}
	return isPending(p) && s.asksForMIG(p)
}

// visible says whether the caller of node may get p: one on its node, or a
// pending pod asking for MIG (one it could be asked to make room for).
func (s *Server) visible(p *corev1.Pod, node string) bool {
	return s.inScope(p, onNode, node) || s.inScope(p, pending, node)
}

// listPods serves a list or a watch of pods (watch=true).
func (s *Server) listPods(ctx context.Context, w http.ResponseWriter, r *http.Request, node string) error {
	q := r.URL.Query()
	var opts metav1.ListOptions
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&q, &opts, nil); err != nil {
		return refusal(http.StatusBadRequest, metav1.StatusReasonBadRequest, "list options: "+err.Error())
	}
	sc, sel, err := podScope(opts.FieldSelector, node)
	if err != nil {
		return err
	}
	opts.FieldSelector = sel
	pods := s.reads.CoreV1().Pods(r.PathValue("namespace"))
	if opts.Watch {
		opts.Watch = false // the typed client sets it
		wi, err := pods.Watch(ctx, opts)
		if err != nil {
			return err
		}
		defer wi.Stop()
		s.stream(ctx, w, wi, sc, node)
		return nil
	}
	list, err := pods.List(ctx, opts)
	if err != nil {
		return err
	}
	out := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: list.ListMeta,
		Items: make([]corev1.Pod, 0, len(list.Items))}
	for i := range list.Items {
		p := &list.Items[i]
		if s.inScope(p, sc, node) {
			stripPod(p)
			out.Items = append(out.Items, *p)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// stream forwards the events of wi, each pod stripped, until wi or ctx
// ends. A pod outside the scope is left out (the API server's selector
// already did, but for pending pods that ask for no MIG); a pending MIG pod
// that leaves the selector because it was bound goes out deleted with its
// name and resource version only, so the watcher forgets it.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, wi watch.Interface, sc scope, node string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flush := func() {}
	if f, ok := w.(http.Flusher); ok {
		flush = f.Flush
		flush()
	}
	enc := json.NewEncoder(w)
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return
		case ev, ok = <-wi.ResultChan():
			if !ok {
				return
			}
		}
		obj := ev.Object
		switch o := ev.Object.(type) {
		case *corev1.Pod:
			switch {
			case ev.Type == watch.Bookmark:
			case ev.Type == watch.Deleted && !s.inScope(o, sc, node) && sc == pending && s.asksForMIG(o):
				// A pending MIG pod bound to a node leaves the selector.
				obj = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion}}
			case !s.inScope(o, sc, node):
				continue
			default:
				stripPod(o)
			}
			obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		case *metav1.Status:
			o.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		default:
			st := apierrors.NewInternalError(fmt.Errorf("node view: unexpected %T in the pod watch", ev.Object)).ErrStatus
			st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			ev.Type, obj = watch.Error, &st
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			s.log.WithError(err).Warn("node view: encode a watch event")
			return
		}
		if err := enc.Encode(metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			return // the watcher left
		}
		flush()
	}
}

// getPod serves one pod the caller may see.
func (s *Server) getPod(ctx context.Context, w http.ResponseWriter, r *http.Request, node string) error {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	p, err := s.reads.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{ResourceVersion: r.URL.Query().Get("resourceVersion")})
	if apierrors.IsNotFound(err) || (err == nil && !s.visible(p, node)) {
		return errNotVisible(podsResource, ns, name, node)
	}
	if err != nil {
		return err
	}
	stripPod(p)
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	writeJSON(w, http.StatusOK, p)
	return nil
}
