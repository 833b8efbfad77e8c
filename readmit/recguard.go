package readmit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RecommendationGuard is the validating admission handler for the node
// agent's writes of recommendation ConfigMaps (CREATE and UPDATE of
// migpro-readmit-*): a node may record a rule only for a pod that runs on
// it. A ValidatingAdmissionPolicy cannot read the pod, nor the rules inside
// the ConfigMap's JSON, so the guard does: every rule the write adds or
// changes (other than counting fitting runs, which any node does) must name
// the writer's node, and the pod it names must exist with that UID, run on
// that node, and belong to the recommendation's controller. Rules left as
// they were and dropped rules pass. Because every rule was checked when it
// was written, the readmission webhook can trust what it reads.
type RecommendationGuard struct {
	store Store
	cfg   settings
}

// NewRecommendationGuard returns the handler for /validate-recommendation;
// store reads pods and ReplicaSets (get).
func NewRecommendationGuard(store Store, opts ...Option) (*RecommendationGuard, error) {
	cfg, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	return &RecommendationGuard{store: store, cfg: cfg}, nil
}

// ServeHTTP answers an AdmissionReview.
func (g *RecommendationGuard) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	serveReview(rw, r, g.cfg.log, "recommendation guard", g.Review)
}

// Review decides one admission request.
func (g *RecommendationGuard) Review(ctx context.Context, req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	defer func() {
		if p := recover(); p != nil {
			g.cfg.log.WithField("panic", fmt.Sprint(p)).Error("recommendation guard: internal error; write refused")
			resp = deny(req, "migpro recommendation guard: internal error")
		}
	}()
	allow := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Resource.Resource != "configmaps" || req.SubResource != "" || !slices.Contains(g.cfg.agentUsers, req.UserInfo.Username) ||
		(req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || !strings.HasPrefix(req.Name, storePrefix) {
		return allow
	}
	log := g.cfg.log.WithFields(logrus.Fields{"user": req.UserInfo.Username, "configmap": req.Namespace + "/" + req.Name})
	if msg := g.check(ctx, req); msg != "" {
		log.WithField("why", msg).Warn("recommendation guard: refused a recommendation")
		return deny(req, msg)
	}
	return allow
}

// storePrefix begins every recommendation ConfigMap's name (StoreName).
const storePrefix = "migpro-readmit-"

func decodeRaw(raw []byte) (*Recommendation, error) {
	if len(raw) == 0 {
		return &Recommendation{}, nil
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(raw, &cm); err != nil {
		return nil, err
	}
	if cm.Data[RecommendationKey] == "" {
		return &Recommendation{}, nil
	}
	return decodeRecommendation(&cm)
}

// sameRule: equal but for the run counting and its time.
func sameRule(a, b Rule) bool {
	a.FitRuns, b.FitRuns = 0, 0
	return a == b
}

// check returns why the write is refused, "" when it is allowed.
func (g *RecommendationGuard) check(ctx context.Context, req *admissionv1.AdmissionRequest) string {
	rec, err := decodeRaw(req.Object.Raw)
	if err != nil {
		return fmt.Sprintf("recommendation %s/%s is not readable: %v", req.Namespace, req.Name, err)
	}
	old, err := decodeRaw(req.OldObject.Raw)
	if err != nil {
		old = &Recommendation{} // an unreadable old one is replaced whole: check every rule
	}
	var fresh []Rule
	for _, r := range rec.Rules {
		kept := old.Controller == rec.Controller && slices.ContainsFunc(old.Rules, func(o Rule) bool { return sameRule(o, r) })
		if !kept {
			fresh = append(fresh, r)
		}
	}
	if len(fresh) == 0 {
		return ""
	}
	nodes := req.UserInfo.Extra[NodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		return fmt.Sprintf("%s may record a recommendation only with a token bound to its node (%s)", req.UserInfo.Username, NodeNameExtra)
	}
	node := nodes[0]
	lctx, cancel := context.WithTimeout(ctx, g.cfg.lookupTimeout)
	defer cancel()
	for _, r := range fresh {
		if r.Node != node {
			return fmt.Sprintf("the migpro agent of node %s may record a rule only for its own node; the rule names node %q", node, r.Node)
		}
		if r.Pod == "" || r.PodUID == "" {
			return fmt.Sprintf("the migpro agent of node %s must name the pod (and its UID) a rule is for", node)
		}
		// The answers name no pod's UID or node, and a missing pod reads
		// as one elsewhere.
		notHere := fmt.Sprintf("the migpro agent of node %s may record a rule only for a pod on its node; pod %s/%s with that UID is not on it", node, req.Namespace, r.Pod)
		pod, err := g.store.Client.CoreV1().Pods(req.Namespace).Get(lctx, r.Pod, metav1.GetOptions{})
		if err != nil || pod.UID != r.PodUID || pod.Spec.NodeName != node {
			return notHere
		}
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			return fmt.Sprintf("pod %s/%s has no controller; no recommendation is kept for it", req.Namespace, r.Pod)
		}
		owner := g.store.Owner(lctx, req.Namespace, Controller{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID})
		if owner != rec.Controller || StoreName(owner.Kind, owner.Name) != req.Name {
			return fmt.Sprintf("pod %s/%s does not belong to %s (%s)", req.Namespace, r.Pod, rec.Controller, req.Name)
		}
	}
	return ""
}
