package readmit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/sirupsen/logrus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// DefaultAgentUser is the node agent's identity (ServiceAccount migpro-agent
// in migpro-system), the one EvictionGuard limits.
const DefaultAgentUser = "system:serviceaccount:migpro-system:migpro-agent"

// NodeNameExtra is the user-info extra in which the API server names the
// node a ServiceAccount token is bound to (a token bound to a pod, as a
// DaemonSet pod's projected token is, or to a node).
const NodeNameExtra = "authentication.kubernetes.io/node-name"

// EvictionGuard is the validating admission handler for CREATE on
// pods/eviction: it lets the node agent evict only pods bound to the node
// its token is bound to. An eviction's admission request carries the
// Eviction, not the pod, so the guard reads the pod and compares its
// spec.nodeName with the node the API server put in the request's user info
// (NodeNameExtra). The Eviction must also carry the pod's UID as a
// precondition, so the pod evicted is the pod checked. A request without
// that node or that UID, or for a pod it cannot read, is refused; a pod
// that does not exist is refused like a pod on another node: the answers
// must not tell a caller which pods exist (anyone can post a review).
type EvictionGuard struct {
	pods typedcorev1.PodsGetter
	cfg  settings
}

// NewEvictionGuard returns the handler for the /validate-eviction path;
// pods reads the pod an eviction targets (needs get on pods).
func NewEvictionGuard(pods typedcorev1.PodsGetter, opts ...Option) (*EvictionGuard, error) {
	cfg, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	return &EvictionGuard{pods: pods, cfg: cfg}, nil
}

// ServeHTTP answers an AdmissionReview (see Webhook.ServeHTTP).
func (g *EvictionGuard) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	serveReview(rw, r, g.cfg.log, "eviction guard", g.Review)
}

// Review decides one admission request.
func (g *EvictionGuard) Review(ctx context.Context, req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	defer func() {
		if p := recover(); p != nil { // refuse, never crash
			g.cfg.log.WithField("panic", fmt.Sprint(p)).Error("eviction guard: internal error; eviction refused")
			resp = deny(req, "migpro eviction guard: internal error")
		}
	}()
	allow := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Resource.Resource != "pods" || req.SubResource != "eviction" || req.Operation != admissionv1.Create ||
		!slices.Contains(g.cfg.agentUsers, req.UserInfo.Username) {
		return allow
	}
	log := g.cfg.log.WithFields(logrus.Fields{"user": req.UserInfo.Username, "pod": req.Namespace + "/" + req.Name})
	nodes := req.UserInfo.Extra[NodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		log.Warn("eviction guard: refused an eviction by a token bound to no node")
		return deny(req, fmt.Sprintf("%s may evict only pods on its own node, and its token names no node (%s): use a token bound to the agent's pod",
			req.UserInfo.Username, NodeNameExtra))
	}
	node := nodes[0]
	lctx, cancel := context.WithTimeout(ctx, g.cfg.lookupTimeout)
	defer cancel()
	pod, err := g.pods.Pods(req.Namespace).Get(lctx, req.Name, metav1.GetOptions{})
	// Anyone in the cluster can post a review to the webhook: the answers
	// name no pod's UID or node, and a pod that does not exist gets the
	// same answer as a pod on another node.
	notHere := fmt.Sprintf("the migpro agent of node %s may evict only pods on its own node; pod %s/%s is not on it", node, req.Namespace, req.Name)
	switch {
	case apierrors.IsNotFound(err):
		return deny(req, notHere)
	case err != nil:
		log.WithError(err).Warn("eviction guard: pod unreadable; eviction refused")
		return deny(req, fmt.Sprintf("migpro eviction guard: cannot read pod %s/%s to check its node", req.Namespace, req.Name))
	case pod.Spec.NodeName != node:
		log.WithFields(logrus.Fields{"node": node, "pod_node": pod.Spec.NodeName}).Warn("eviction guard: refused an eviction of a pod on another node")
		return deny(req, notHere)
	case !carriesUID(req, pod):
		log.WithField("pod_uid", string(pod.UID)).Warn("eviction guard: refused an eviction without the pod's UID as a precondition")
		return deny(req, fmt.Sprintf("an eviction by the migpro agent must carry the pod's UID as a precondition (deleteOptions.preconditions.uid): pod %s/%s is checked, not whatever pod later has its name",
			req.Namespace, req.Name))
	}
	log.WithField("node", node).Debug("eviction guard: eviction of a pod on the agent's own node allowed")
	return allow
}

// carriesUID reports whether the Eviction requires the pod's UID, so the
// API server evicts only the pod the guard checked, never one recreated
// under its name on another node meanwhile.
func carriesUID(req *admissionv1.AdmissionRequest, pod *corev1.Pod) bool {
	var ev policyv1.Eviction
	if err := json.Unmarshal(req.Object.Raw, &ev); err != nil {
		return false
	}
	o := ev.DeleteOptions
	return o != nil && o.Preconditions != nil && o.Preconditions.UID != nil && *o.Preconditions.UID == pod.UID
}

func deny(req *admissionv1.AdmissionRequest, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: false,
		Result: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: msg}}
}
