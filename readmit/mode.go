package readmit

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Mode is what the Marker does with a mark, cluster-wide (the agent's
// --readmit-mode, the chart's readmit.mode).
type Mode string

const (
	// ModeOff ignores marks: no annotation, Event, recommendation or eviction.
	ModeOff Mode = "off"
	// ModeAdvise, the default, records the Event, the annotation, the
	// recommendation (marked advised: the webhook does not apply it) and
	// the metrics, and evicts nothing.
	ModeAdvise Mode = "advise"
	// ModeEvict also evicts the pod so that its controller recreates it on
	// the recommended profile.
	ModeEvict Mode = "evict"
)

// DefaultMode is the mode when none is given.
const DefaultMode = ModeAdvise

// ParseMode reads a mode's name; empty is DefaultMode.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return DefaultMode, nil
	case ModeOff, ModeAdvise, ModeEvict:
		return m, nil
	}
	return "", fmt.Errorf("readmit mode %q: want off, advise or evict", s)
}

// LabelMode on a pod, or else on its namespace, chooses advise or evict for
// that pod when the admin allows it (WithLabelOverride; the agent's
// --readmit-mode-labels). Other values, and any label while the cluster's
// mode is off, are ignored.
const LabelMode = "migpro.dev/readmit-mode"

// WithMode sets the Marker's cluster-wide mode (default DefaultMode).
func WithMode(m Mode) Option { return func(s *settings) { s.mode = m } }

// WithLabelOverride lets LabelMode on a pod or its namespace switch evict on
// or off for it (Marker; default false: labels are ignored).
func WithLabelOverride(on bool) Option { return func(s *settings) { s.labelOverride = on } }

// modeFor is the mode for one pod: the cluster's, or its label's, or its
// namespace's label's, when labels are allowed.
func (m *Marker) modeFor(ctx context.Context, pod *corev1.Pod) Mode {
	if m.mode == ModeOff || !m.labelOverride {
		return m.mode
	}
	if v := Mode(pod.Labels[LabelMode]); v == ModeAdvise || v == ModeEvict {
		return v
	}
	ns, err := m.client.CoreV1().Namespaces().Get(ctx, pod.Namespace, metav1.GetOptions{})
	if err != nil {
		m.log.WithError(err).WithField("namespace", pod.Namespace).Warn("readmit: cannot read the namespace's mode label; using the cluster's mode")
		return m.mode
	}
	if v := Mode(ns.Labels[LabelMode]); v == ModeAdvise || v == ModeEvict {
		return v
	}
	return m.mode
}

// Metrics are the Marker's Prometheus families; Collectors lists them for
// the agent's registry.
type Metrics struct {
	// Advised counts marks acted on in advise mode.
	Advised prometheus.Counter
	// AdvisedOOM counts containers marked in advise mode whose run then
	// ran out of memory (RunEnd.RanOut): the evidence for switching to evict.
	AdvisedOOM prometheus.Counter
}

func newMetrics() *Metrics {
	return &Metrics{
		Advised: prometheus.NewCounter(prometheus.CounterOpts{Name: "migpro_readmit_advised_total",
			Help: "Predictor marks recorded in advise mode: Event, annotation and recommendation, no eviction."}),
		AdvisedOOM: prometheus.NewCounter(prometheus.CounterOpts{Name: "migpro_readmit_advised_oom_total",
			Help: "Containers marked in advise mode that then ran out of GPU memory (their peak reached the instance's memory)."}),
	}
}

// Collectors returns the Marker's metric families, to register once.
func (m *Marker) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.metrics.Advised, m.metrics.AdvisedOOM}
}

// Metrics returns the Marker's counters.
func (m *Marker) Metrics() *Metrics { return m.metrics }

// advisedSet remembers the containers marked in advise mode on this node,
// so that an OOM at their end is counted even when the pod is gone. It is
// bounded; the pod's annotation is the record beyond it.
type advisedSet struct {
	mu   sync.Mutex
	keys map[string]bool
}

const maxAdvised = 4096

func advisedKey(ns, pod, uid, container string) string {
	return ns + "/" + pod + "/" + uid + "/" + container
}

func (a *advisedSet) add(k string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.keys == nil || len(a.keys) >= maxAdvised {
		a.keys = map[string]bool{}
	}
	a.keys[k] = true
}

// take reports whether k was advised, and forgets it.
func (a *advisedSet) take(k string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ok := a.keys[k]
	delete(a.keys, k)
	return ok
}
