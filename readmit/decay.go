package readmit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/migpro/migpro/defaults"
)

// DecayRuns is how many consecutive runs must fit the smaller profile before
// a rule moving a container off it is dropped.
const DecayRuns = 3

// Run is one finished run of an owner's container, for RecordRun: the peak it
// reached and whether that peak (with the estimator's margin and context)
// fits each profile a rule moved it away from.
type Run struct {
	Container string
	PeakBytes uint64
	// FitsFrom reports whether the peak fits the MIG resource a rule moves
	// the container away from (the caller knows the profiles' memory).
	FitsFrom func(from string) bool
}

// RecordRun counts a finished run against the owner's rules for its
// container: a run whose peak fits a rule's From adds one to the rule's
// FitRuns, a run that does not resets it, and a rule reaching DecayRuns is
// dropped, so the owner's next pods ask for the smaller profile again. It
// returns the rules dropped. Nothing stays oversized forever, and one run
// that happened to stay small does not undo a move.
func (s Store) RecordRun(ctx context.Context, namespace string, c Controller, run Run) (dropped []Rule, err error) {
	c = s.Owner(ctx, namespace, c)
	name := StoreName(c.Kind, c.Name)
	cms := s.Client.CoreV1().ConfigMaps(namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dropped = nil
		cm, err := s.readConfigMap(ctx, namespace, name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if !managed(cm) {
			return nil
		}
		rec, err := decodeRecommendation(cm)
		if err != nil || rec.Controller.UID != c.UID {
			return nil // unreadable or stale: nothing to decay
		}
		kept := rec.Rules[:0]
		changed := false
		for _, r := range rec.Rules {
			if r.Container != "" && r.Container != run.Container {
				kept = append(kept, r)
				continue
			}
			old := r.FitRuns
			if run.FitsFrom != nil && run.FitsFrom(r.From) {
				r.FitRuns++
			} else {
				r.FitRuns = 0
			}
			changed = changed || r.FitRuns != old
			if r.FitRuns >= DecayRuns {
				dropped = append(dropped, r)
				changed = true
				continue
			}
			kept = append(kept, r)
		}
		if !changed {
			return nil
		}
		rec.Rules = kept
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		cm.Data[RecommendationKey] = string(b)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record run of %s in %s/%s: %w", c, namespace, name, err)
	}
	return dropped, nil
}

// RunEnd is a finished run of a pod's container as the node agent saw it:
// who it was and the peak it reached.
type RunEnd struct {
	PodNamespace  string
	PodName       string
	PodUID        string // optional; when set, a newer pod of that name is not this run's
	ContainerName string
	PeakBytes     uint64
	// FitsProfile reports whether the peak, with the caller's margin, fits
	// a MIG profile ("1g.5gb"). Nil, or a run that must not count as
	// fitting (the predictor marked it, so its end says nothing about its
	// need), fits nothing.
	FitsProfile func(profile string) bool
	// RanOut is set when the run ran out of GPU memory: its peak reached
	// its instance's memory. A run marked in advise mode that ran out is
	// counted (Metrics.AdvisedOOM).
	RanOut bool
}

// RecordEnd counts a finished run against the recommendation of its pod's
// top-level owner (Store.RecordRun): the pod is read for its controller, so
// it must still exist. It returns the rules dropped, and records a
// ReadmitDecayed Event on the pod for them. A run without pod identity, of a
// pod that is gone or newer, or of a pod without a controller counts
// nothing.
func (m *Marker) RecordEnd(ctx context.Context, e RunEnd) ([]Rule, error) {
	if e.PodNamespace == "" || e.PodName == "" || e.ContainerName == "" {
		return nil, nil
	}
	pod, err := m.client.CoreV1().Pods(e.PodNamespace).Get(ctx, e.PodName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		m.countAdvisedOOM(e, nil)
		m.log.WithField("pod", e.PodNamespace+"/"+e.PodName).Debug("readmit: the run's pod is gone; run not counted")
		return nil, nil
	case err != nil:
		m.countAdvisedOOM(e, nil)
		return nil, fmt.Errorf("readmit: record run of %s/%s: read pod: %w", e.PodNamespace, e.PodName, err)
	case e.PodUID != "" && string(pod.UID) != e.PodUID:
		m.countAdvisedOOM(e, nil)
		return nil, nil
	}
	m.countAdvisedOOM(e, pod)
	ctrl := metav1.GetControllerOf(pod)
	if ctrl == nil {
		return nil, nil
	}
	fits := func(resource string) bool {
		profile, ok := strings.CutPrefix(resource, m.domain+"/"+defaults.ResourcePrefix)
		return ok && e.FitsProfile != nil && e.FitsProfile(profile)
	}
	c := Controller{APIVersion: ctrl.APIVersion, Kind: ctrl.Kind, Name: ctrl.Name, UID: ctrl.UID}
	dropped, err := m.store.RecordRun(ctx, pod.Namespace, c, Run{Container: e.ContainerName, PeakBytes: e.PeakBytes, FitsFrom: fits})
	if err != nil {
		return nil, fmt.Errorf("readmit: %w", err)
	}
	for _, r := range dropped {
		msg := fmt.Sprintf("container %s peaked at %s, and %d runs in a row fitted %s again: the recommendation %s → %s is dropped, so the next pods ask for %s",
			e.ContainerName, formatBytes(e.PeakBytes), DecayRuns, r.From, r.From, r.To, r.From)
		m.event(ctx, pod, corev1.EventTypeNormal, ReasonDecayed, msg)
		m.log.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name, "container": e.ContainerName,
			"profile": r.From, "to_profile": r.To, "peak_bytes": e.PeakBytes}).Info("readmit: recommendation decayed")
	}
	return dropped, nil
}
