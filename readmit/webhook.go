package readmit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/sirupsen/logrus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Recommender looks up a controller's recommendation; Store is one.
type Recommender interface {
	Get(ctx context.Context, namespace string, c Controller) (*Recommendation, error)
}

// Webhook is the mutating admission handler: on pod CREATE it rewrites the
// MIG requests of a pod whose controller has a recommendation. It never
// refuses a pod.
type Webhook struct {
	recs Recommender
	cfg  settings
}

// NewWebhook returns the handler for the /mutate path; recs gives the
// controllers' recommendations (Store is one).
func NewWebhook(recs Recommender, opts ...Option) (*Webhook, error) {
	cfg, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	return &Webhook{recs: recs, cfg: cfg}, nil
}

// maxReviewBytes bounds a request body: a pod is at most about 1.5 MB in etcd.
const maxReviewBytes = 8 << 20

// ServeHTTP answers an AdmissionReview. A body that is not one gets a 400,
// which the API server treats as a webhook failure: with failurePolicy
// Ignore the pod is admitted unchanged.
func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	serveReview(rw, r, w.cfg.log, "readmit webhook", w.Review)
}

// serveReview decodes an admission.k8s.io/v1 AdmissionReview, answers it
// with review, and writes the response review. name prefixes its log lines.
func serveReview(rw http.ResponseWriter, r *http.Request, log logrus.FieldLogger, name string,
	review func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	if r.Method != http.MethodPost {
		http.Error(rw, "POST an admission.k8s.io/v1 AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, maxReviewBytes))
	if err != nil {
		log.WithError(err).Warn(name + ": unreadable request")
		http.Error(rw, "read request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
		if err == nil {
			err = fmt.Errorf("no request in the AdmissionReview")
		}
		log.WithError(err).Warn(name + ": not an AdmissionReview")
		http.Error(rw, "not an admission.k8s.io/v1 AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: review(r.Context(), in.Request),
	}
	b, err := json.Marshal(out)
	if err != nil {
		http.Error(rw, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(b)
}

// Review decides one admission request. It always allows; it patches a pod
// whose controller has a recommendation, and warns when it could not look.
func (w *Webhook) Review(ctx context.Context, req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	resp = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	defer func() {
		if p := recover(); p != nil { // never let a bad request take the webhook down
			w.cfg.log.WithField("panic", fmt.Sprint(p)).Error("readmit webhook: internal error; pod admitted unchanged")
			resp = &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true,
				Warnings: []string{"migpro-readmit: internal error; pod left unchanged"}}
		}
	}()
	if req.Kind.Kind != "Pod" || req.Resource.Resource != "pods" || req.SubResource != "" || req.Operation != admissionv1.Create {
		return resp
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		w.cfg.log.WithError(err).WithField("namespace", req.Namespace).Warn("readmit webhook: unreadable pod")
		resp.Warnings = []string{"migpro-readmit: could not read the pod; left unchanged"}
		return resp
	}
	ctrl := metav1.GetControllerOf(&pod)
	if ctrl == nil || !asksForMIG(&pod, w.cfg.domain) {
		return resp
	}
	ns := req.Namespace
	if ns == "" {
		ns = pod.Namespace
	}
	c := Controller{APIVersion: ctrl.APIVersion, Kind: ctrl.Kind, Name: ctrl.Name, UID: ctrl.UID}
	log := w.cfg.log.WithFields(logrus.Fields{"pod": ns + "/" + podName(&pod), "controller": c.String()})
	lctx, cancel := context.WithTimeout(ctx, w.cfg.lookupTimeout)
	defer cancel()
	rec, err := w.recs.Get(lctx, ns, c)
	if err != nil {
		log.WithError(err).Warn("readmit webhook: recommendation unreadable; pod admitted unchanged")
		resp.Warnings = []string{"migpro-readmit: recommendation unreadable; MIG request left unchanged"}
		return resp
	}
	if rec == nil {
		log.Debug("readmit webhook: no recommendation for the pod's controller; unchanged")
		return resp
	}
	ops, rewrites, warnings := rewritePatch(&pod, rec, w.cfg.domain)
	resp.Warnings = warnings
	if len(ops) == 0 {
		return resp
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		resp.Warnings = append(resp.Warnings, "migpro-readmit: could not encode the patch; pod left unchanged")
		return resp
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = patch, &pt
	for _, rw := range rewrites {
		log.WithFields(logrus.Fields{"container": rw.Container, "profile": rw.From, "to_profile": rw.To}).
			Info("readmit webhook: MIG request rewritten to the recommended profile")
	}
	return resp
}

func asksForMIG(pod *corev1.Pod, domain string) bool {
	for _, c := range pod.Spec.Containers {
		if len(migResources(c, domain)) > 0 {
			return true
		}
	}
	return false
}

// podName is the pod's name, or its generateName prefix at CREATE.
func podName(pod *corev1.Pod) string {
	if pod.Name != "" {
		return pod.Name
	}
	return pod.GenerateName + "*"
}
