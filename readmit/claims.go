package readmit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sirupsen/logrus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationPodClaimName is the annotation the resourceclaim controller
// puts on a claim it made from a pod's ResourceClaimTemplate: the name of
// the pod's entry in spec.resourceClaims.
const AnnotationPodClaimName = "resource.kubernetes.io/pod-claim-name"

// ClaimWebhook is the mutating admission handler for ResourceClaim CREATE:
// a claim the resourceclaim controller makes from a template for a pod
// whose controller has a recommendation asks for the recommended profile
// instead. It reads the pod (the claim's owner) for its controller and for
// which containers use the claim, and the recommendation as the pod
// Webhook does. It never refuses a claim.
type ClaimWebhook struct {
	recs  Recommender
	pods  func(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	class string
	cfg   settings
}

// NewClaimWebhook returns the handler for the /mutate-claim path: store
// reads pods, ReplicaSets and recommendations (get); class is the
// DeviceClass of every migpro device ("" for DefaultDeviceClass).
func NewClaimWebhook(store Store, class string, opts ...Option) (*ClaimWebhook, error) {
	cfg, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	if class == "" {
		class = DefaultDeviceClass
	}
	pods := func(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
		return store.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return &ClaimWebhook{recs: store, pods: pods, class: class, cfg: cfg}, nil
}

// ServeHTTP answers an AdmissionReview.
func (w *ClaimWebhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	serveReview(rw, r, w.cfg.log, "readmit claim webhook", w.Review)
}

// Review decides one admission request. It always allows; it patches a
// claim made for a pod whose controller has a recommendation, and warns
// when it could not look.
func (w *ClaimWebhook) Review(ctx context.Context, req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	resp = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	defer func() {
		if p := recover(); p != nil {
			w.cfg.log.WithField("panic", fmt.Sprint(p)).Error("readmit claim webhook: internal error; claim admitted unchanged")
			resp = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true,
				Warnings: []string{"migpro-readmit: internal error; claim left unchanged"}}
		}
	}()
	if req.Kind.Kind != "ResourceClaim" || req.Resource.Resource != "resourceclaims" || req.SubResource != "" || req.Operation != admissionv1.Create {
		return resp
	}
	var claim resourceapi.ResourceClaim
	if err := json.Unmarshal(req.Object.Raw, &claim); err != nil {
		w.cfg.log.WithError(err).WithField("namespace", req.Namespace).Warn("readmit claim webhook: unreadable claim")
		resp.Warnings = []string{"migpro-readmit: could not read the claim; left unchanged"}
		return resp
	}
	podClaim := claim.Annotations[AnnotationPodClaimName]
	owner := metav1.GetControllerOf(&claim)
	if podClaim == "" || owner == nil || owner.Kind != "Pod" || owner.APIVersion != "v1" {
		return resp // not made from a pod's template
	}
	ns := req.Namespace
	if ns == "" {
		ns = claim.Namespace
	}
	log := w.cfg.log.WithFields(logrus.Fields{"claim": ns + "/" + claimName(&claim), "pod": ns + "/" + owner.Name})
	lctx, cancel := context.WithTimeout(ctx, w.cfg.lookupTimeout)
	defer cancel()
	pod, err := w.pods(lctx, ns, owner.Name)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && pod.UID != owner.UID):
		log.Debug("readmit claim webhook: the claim's pod is gone; unchanged")
		return resp
	case err != nil:
		log.WithError(err).Warn("readmit claim webhook: pod unreadable; claim admitted unchanged")
		resp.Warnings = []string{"migpro-readmit: the claim's pod is unreadable; claim left unchanged"}
		return resp
	}
	ctrl := metav1.GetControllerOf(pod)
	if ctrl == nil || pod.Labels[LabelReadmit] == ReadmitDisabled {
		return resp
	}
	users := claimUsers(pod, podClaim, &claim.Spec.Devices)
	if len(users) == 0 {
		return resp
	}
	c := Controller{APIVersion: ctrl.APIVersion, Kind: ctrl.Kind, Name: ctrl.Name, UID: ctrl.UID}
	log = log.WithField("controller", c.String())
	rec, err := w.recs.Get(lctx, ns, c)
	if err != nil {
		log.WithError(err).Warn("readmit claim webhook: recommendation unreadable; claim admitted unchanged")
		resp.Warnings = []string{"migpro-readmit: recommendation unreadable; claim left unchanged"}
		return resp
	}
	if rec == nil {
		log.Debug("readmit claim webhook: no recommendation for the pod's controller; unchanged")
		return resp
	}
	requests, rewrites, warnings := rewriteClaim(&claim.Spec.Devices, users, rec, w.cfg.domain, w.class)
	resp.Warnings = warnings
	if len(rewrites) == 0 {
		log.Debug("readmit claim webhook: no rule applies to the claim's requests; unchanged")
		return resp
	}
	patch, err := claimPatch(&claim, requests, rewrites)
	if err != nil {
		resp.Warnings = append(resp.Warnings, "migpro-readmit: could not encode the patch; claim left unchanged")
		return resp
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = patch, &pt
	for _, rw := range rewrites {
		log.WithFields(logrus.Fields{"request": rw.Request, "containers": rw.Containers, "profile": rw.From, "to_profile": rw.To}).
			Info("readmit claim webhook: claim request moved to the recommended profile")
	}
	return resp
}

// claimUsers maps each request of the claim to the containers of the pod
// that use it: those that name the pod's claim podClaim and either that
// request or none (the whole claim).
func claimUsers(pod *corev1.Pod, podClaim string, spec *resourceapi.DeviceClaim) map[string][]string {
	out := map[string][]string{}
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, r := range spec.Requests {
		for _, c := range all {
			for _, rc := range c.Resources.Claims {
				if rc.Name == podClaim && (rc.Request == "" || rc.Request == r.Name || strings.HasPrefix(rc.Request, r.Name+"/")) && !contains(out[r.Name], c.Name) {
					out[r.Name] = append(out[r.Name], c.Name)
				}
			}
		}
	}
	return out
}

// claimPatch is the JSON patch that replaces the claim's requests and
// annotates what moved.
func claimPatch(claim *resourceapi.ResourceClaim, requests []resourceapi.DeviceRequest, rewrites []ClaimRewrite) ([]byte, error) {
	v, err := json.Marshal(rewrites)
	if err != nil {
		return nil, err
	}
	ops := []patchOp{{Op: "replace", Path: "/spec/devices/requests", Value: requests}}
	if claim.Annotations == nil {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{AnnotationReadmitted: string(v)}})
	} else {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + jsonPointerEscape(AnnotationReadmitted), Value: string(v)})
	}
	return json.Marshal(ops)
}

// claimName is the claim's name, or its generateName prefix at CREATE.
func claimName(c *resourceapi.ResourceClaim) string {
	if c.Name != "" {
		return c.Name
	}
	return c.GenerateName + "*"
}
