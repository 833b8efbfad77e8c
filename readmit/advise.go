package readmit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/predictor"
)

// advise is Handle in advise mode, after the annotation: the recommendation
// is stored as advised (the webhook does not apply it), an Event says what
// evict mode would have done, and the advised counter goes up. Nothing is
// evicted.
func (m *Marker) advise(ctx context.Context, pod *corev1.Pod, mk predictor.Mark, what string, out Outcome) (Outcome, error) {
	out.Advised = true
	m.advised.add(advisedKey(pod.Namespace, pod.Name, string(pod.UID), mk.ContainerName))
	m.metrics.Advised.Inc()
	msg := fmt.Sprintf("%s; recommended %s", what, out.To)
	if ctrl := metav1.GetControllerOf(pod); ctrl != nil {
		out.Controller = m.store.Owner(ctx, pod.Namespace, Controller{APIVersion: ctrl.APIVersion, Kind: ctrl.Kind, Name: ctrl.Name, UID: ctrl.UID})
		rule := Rule{Container: mk.ContainerName, From: out.From, To: out.To, ForecastBytes: mk.Forecast, Reason: string(mk.Reason),
			Pod: pod.Name, PodUID: pod.UID, Node: pod.Spec.NodeName, At: m.now().UTC().Truncate(time.Second), Advised: true}
		var err error
		if out.Recorded, err = m.store.Record(ctx, pod.Namespace, out.Controller, rule); err != nil {
			m.log.WithError(err).WithFields(podFields(pod)).Warn("readmit: advised recommendation not stored")
		}
		msg += " for pods of " + out.Controller.String()
	}
	m.event(ctx, pod, corev1.EventTypeWarning, ReasonPredictedOOM, msg+"; readmission is in advise mode: not evicted")
	m.log.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name, "container": mk.ContainerName, "to_profile": out.To}).
		Warn("readmit: predicted out of memory; advise mode, pod left running")
	return out, nil
}

// countAdvisedOOM counts a run that ran out of memory after a mark in
// advise mode: the Marker remembers the containers it advised, and the
// pod's annotation says so when the Marker has restarted since.
func (m *Marker) countAdvisedOOM(e RunEnd, pod *corev1.Pod) {
	if !e.RanOut {
		return
	}
	advised := m.advised.take(advisedKey(e.PodNamespace, e.PodName, e.PodUID, e.ContainerName))
	if !advised && pod != nil {
		var p PredictedOOM
		advised = decodePredicted(pod, &p) && p.Mode == ModeAdvise && p.Container == e.ContainerName
	}
	if advised {
		m.metrics.AdvisedOOM.Inc()
		m.log.WithFields(logrus.Fields{"pod": e.PodNamespace + "/" + e.PodName, "container": e.ContainerName}).
			Warn("readmit: a container marked in advise mode ran out of memory")
	}
}

// decodePredicted reads a pod's AnnotationPredictedOOM.
func decodePredicted(pod *corev1.Pod, p *PredictedOOM) bool {
	v, ok := pod.Annotations[AnnotationPredictedOOM]
	return ok && json.Unmarshal([]byte(v), p) == nil
}
