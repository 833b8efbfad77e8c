package readmit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	typedbatchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/predictor"
)

// Marker acts on predictor marks for pods: annotation, Event,
// recommendation, eviction. It is safe for concurrent use; Handle blocks
// while a PodDisruptionBudget holds the eviction back, so call it off any
// hot path (the agent's OnMark subscribers already are).
type Marker struct {
	client  Client
	store   Store
	domain  string
	node    string
	log     logrus.FieldLogger
	backoff wait.Backoff
	now     func() time.Time
	mode    Mode
	// labelOverride lets LabelMode choose advise or evict per pod.
	labelOverride bool
	metrics       *Metrics
	advised       advisedSet
}

// NewMarker returns a Marker that talks to the API server through client.
func NewMarker(client Client, opts ...Option) (*Marker, error) {
	st, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	return &Marker{client: client, store: Store{Client: client, ReadByPatch: true}, domain: st.domain, node: st.node,
		log: st.log, backoff: st.backoff, now: time.Now,
		mode: st.mode, labelOverride: st.labelOverride, metrics: newMetrics()}, nil
}

// Client is the part of a Kubernetes clientset readmission uses: pods,
// their evictions and events, and the controllers that own them (replica
// sets, jobs); a kubernetes.Interface is one. Taking only this keeps the
// other API groups' clients out of the agent's binary.
type Client interface {
	CoreV1() typedcorev1.CoreV1Interface
	AppsV1() typedappsv1.AppsV1Interface
	BatchV1() typedbatchv1.BatchV1Interface
}

// Outcome is what Handle did.
type Outcome struct {
	Ignored    string     // why the mark was ignored, when it was
	Controller Controller // the pod's controller, when it has one
	From, To   string     // resource names
	Recorded   bool       // the recommendation was written (false: it was already there)
	Evicted    bool
	// Mode is the mode the mark was handled in; Advised is set when it was
	// recorded in advise mode.
	Mode    Mode
	Advised bool
}

// Handle acts on one mark. It is idempotent: a second call for the same pod
// finds the annotation, the recommendation and the events already there,
// and the pod already evicted (or gone).
func (m *Marker) Handle(ctx context.Context, mk predictor.Mark) (Outcome, error) {
	var out Outcome
	if err := validateMark(mk); err != nil {
		out.Ignored = err.Error()
		return out, nil
	}
	if m.mode == ModeOff {
		out.Mode, out.Ignored = ModeOff, "readmission is off"
		return out, nil
	}
	log := m.log.WithFields(logrus.Fields{"pod": mk.PodNamespace + "/" + mk.PodName, "container": mk.ContainerName,
		"profile": mk.InstanceProfile, "to_profile": mk.Profile})
	pod, err := m.client.CoreV1().Pods(mk.PodNamespace).Get(ctx, mk.PodName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		out.Ignored = "pod is gone"
		return out, nil
	case err != nil:
		return out, fmt.Errorf("readmit %s/%s: read pod: %w", mk.PodNamespace, mk.PodName, err)
	case mk.PodUID != "" && string(pod.UID) != mk.PodUID:
		out.Ignored = "the pod of that name is a newer one"
		return out, nil
	case m.node != "" && pod.Spec.NodeName != "" && pod.Spec.NodeName != m.node:
		out.Ignored = "pod runs on node " + pod.Spec.NodeName
		return out, nil
	}
	out.Mode = m.modeFor(ctx, pod)
	from, err := m.fromResource(pod, mk)
	if err != nil {
		out.Ignored = err.Error()
		log.WithError(err).Warn("readmit: mark ignored")
		return out, nil
	}
	out.From = from
	if mk.Profile != "" && mk.Fits {
		out.To = defaults.ResourceName(m.domain, mk.Profile)
	}
	if out.To == from {
		out.Ignored = "recommended profile is the current one"
		return out, nil
	}
	if err := m.annotate(ctx, pod, mk, from, out.To, out.Mode); errors.Is(err, errPodGone) {
		out.Ignored = "pod is gone"
		return out, nil
	} else if err != nil {
		return out, err
	}
	what := fmt.Sprintf("container %s is predicted to need %s on %s", mk.ContainerName, formatBytes(mk.Forecast), from)
	if out.To == "" {
		m.event(ctx, pod, corev1.EventTypeWarning, ReasonPredictedOOM, what+"; no larger MIG profile fits: not evicted")
		log.Warn("readmit: predicted out of memory, and no profile fits: pod left running")
		out.Ignored = "no profile fits the forecast"
		return out, nil
	}
	if ok, err := m.offered(ctx, out.To); err != nil {
		log.WithError(err).Warn("readmit: cannot tell whether any node offers the recommended profile; going ahead")
	} else if !ok {
		m.event(ctx, pod, corev1.EventTypeWarning, ReasonPredictedOOM, fmt.Sprintf("%s; recommended %s, which no node offers: not evicted", what, out.To))
		log.Warn("readmit: predicted out of memory; no node offers a larger profile, pod left running")
		out.Ignored = "no node offers " + out.To
		return out, nil
	}
	if out.Mode == ModeAdvise {
		return m.advise(ctx, pod, mk, what, out)
	}
	ctrl := metav1.GetControllerOf(pod)
	if ctrl == nil {
		m.event(ctx, pod, corev1.EventTypeWarning, ReasonPredictedOOM, fmt.Sprintf(
			"%s; recommended %s. Not evicted: the pod has no controller to recreate it; recreate it asking for %s", what, out.To, out.To))
		log.Warn("readmit: predicted out of memory; bare pod, not evicted")
		out.Ignored = "pod has no controller"
		return out, nil
	}
	out.Controller = m.store.Owner(ctx, pod.Namespace, Controller{APIVersion: ctrl.APIVersion, Kind: ctrl.Kind, Name: ctrl.Name, UID: ctrl.UID})
	if reason := m.loops(ctx, pod, mk.ContainerName, from, out); reason != "" {
		m.event(ctx, pod, corev1.EventTypeWarning, ReasonNotEvicted, what+"; not evicted: "+reason)
		log.WithField("controller", out.Controller.String()).Warn("readmit: predicted out of memory; not evicted again: " + reason)
		out.Ignored = reason
		return out, nil
	}
	rule := Rule{Container: mk.ContainerName, From: from, To: out.To, ForecastBytes: mk.Forecast,
		Reason: string(mk.Reason), Pod: pod.Name, PodUID: pod.UID, Node: pod.Spec.NodeName, At: m.now().UTC().Truncate(time.Second)}
	if out.Recorded, err = m.store.Record(ctx, pod.Namespace, out.Controller, rule); err != nil {
		// Without the recommendation the replacement would ask for the same
		// profile: evicting would only restart the OOM.
		m.event(ctx, pod, corev1.EventTypeWarning, ReasonNotEvicted, what+"; recommendation not stored, not evicted: "+err.Error())
		return out, fmt.Errorf("readmit %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	msg := fmt.Sprintf("%s; recommended %s for pods of %s", what, out.To, out.Controller)
	if pod.Labels[LabelReadmit] == ReadmitDisabled {
		// The webhook skips such pods too: the replacement would come back
		// on the same profile. The recommendation stays for when the label
		// goes.
		note := "the pod is labelled " + LabelReadmit + "=" + ReadmitDisabled
		m.event(ctx, pod, corev1.EventTypeWarning, ReasonNotEvicted, msg+"; not evicted: "+note)
		log.WithField("controller", out.Controller.String()).Warn("readmit: predicted out of memory; readmission disabled by label, pod left running")
		out.Ignored = note
		return out, nil
	}
	if note := fixedClaim(pod, mk.ContainerName); note != "" {
		m.event(ctx, pod, corev1.EventTypeWarning, ReasonNotEvicted, msg+"; not evicted: "+note)
		log.WithField("controller", out.Controller.String()).Warn("readmit: predicted out of memory; its claim would come back as it is, pod left running")
		out.Ignored = note
		return out, nil
	}
	if out.Controller.Kind == "Job" && out.Controller.APIVersion == "batch/v1" {
		note, err := m.jobEvictionCost(ctx, pod, out.Controller)
		if err != nil {
			m.event(ctx, pod, corev1.EventTypeWarning, ReasonNotEvicted, msg+"; not evicted: "+err.Error())
			return out, fmt.Errorf("readmit %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if note != "" {
			m.event(ctx, pod, corev1.EventTypeWarning, ReasonNotEvicted, msg+"; not evicted: "+note)
			log.WithField("controller", out.Controller.String()).Warn("readmit: predicted out of memory; evicting would count against the Job's backoffLimit, pod left running")
			out.Ignored = note
			return out, nil
		}
	}
	m.event(ctx, pod, corev1.EventTypeWarning, ReasonPredictedOOM, msg+"; evicting")
	if pod.DeletionTimestamp != nil {
		out.Evicted = true
		return out, nil
	}
	if err := m.evict(ctx, pod, msg); err != nil {
		m.event(ctx, pod, corev1.EventTypeWarning, ReasonNotEvicted, msg+"; "+err.Error())
		log.WithError(err).Error("readmit: pod not evicted")
		return out, fmt.Errorf("readmit %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	out.Evicted = true
	m.event(ctx, pod, corev1.EventTypeNormal, ReasonEvicted, fmt.Sprintf("evicted so that %s recreates it on %s", out.Controller, out.To))
	log.WithField("controller", out.Controller.String()).Info("readmit: pod evicted; its replacement will ask for the recommended profile")
	return out, nil
}

// fromResource is the MIG resource the marked container asks for: the one
// of the mark's profile, or the container's only MIG resource. A container
// whose GPU comes from a ResourceClaim asks for no MIG resource: its
// resource is the mark's instance profile (the device it runs on).
func (m *Marker) fromResource(pod *corev1.Pod, mk predictor.Mark) (string, error) {
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == mk.ContainerName {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil {
		return "", fmt.Errorf("pod has no container %q", mk.ContainerName)
	}
	var names []string
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for n := range list {
			if defaults.IsMIGResource(m.domain, string(n)) && !contains(names, string(n)) {
				names = append(names, string(n))
			}
		}
	}
	sort.Strings(names)
	if len(names) == 0 && len(c.Resources.Claims) > 0 && mk.InstanceProfile != "" {
		// Its GPU comes from a ResourceClaim: the profile is the one of the
		// instance it runs on, which the agent read from the device.
		return defaults.ResourceName(m.domain, mk.InstanceProfile), nil
	}
	if mk.InstanceProfile != "" {
		want := defaults.ResourceName(m.domain, mk.InstanceProfile)
		if contains(names, want) {
			return want, nil
		}
		return "", fmt.Errorf("container %s does not ask for %s (it asks for %v)", c.Name, want, names)
	}
	if len(names) != 1 {
		return "", fmt.Errorf("container %s asks for %d MIG resources %v and the mark names no profile", c.Name, len(names), names)
	}
	return names[0], nil
}

var errPodGone = errors.New("readmit: pod is gone")

// annotate sets AnnotationPredictedOOM with a merge patch, unless the pod
// already carries the same prediction.
func (m *Marker) annotate(ctx context.Context, pod *corev1.Pod, mk predictor.Mark, from, to string, mode Mode) error {
	var old PredictedOOM
	if json.Unmarshal([]byte(pod.Annotations[AnnotationPredictedOOM]), &old) == nil &&
		old.Container == mk.ContainerName && old.From == from && old.To == to && old.Mode == mode {
		return nil
	}
	v, err := json.Marshal(PredictedOOM{Container: mk.ContainerName, From: from, To: to, ForecastBytes: mk.Forecast,
		Reason: string(mk.Reason), Node: pod.Spec.NodeName, At: m.now().UTC().Truncate(time.Second), Mode: mode})
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationPredictedOOM: string(v)}}})
	if err != nil {
		return err
	}
	_, err = m.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return errPodGone
	}
	if err != nil {
		return fmt.Errorf("readmit %s/%s: annotate: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func podFields(pod *corev1.Pod) logrus.Fields {
	return logrus.Fields{"pod": pod.Namespace + "/" + pod.Name}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// formatBytes prints a byte count in GiB or MiB.
func formatBytes(b uint64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", b>>20)
}
