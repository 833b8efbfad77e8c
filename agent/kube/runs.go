package kube

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/telemetry"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/readmit"
)

// RunRecorder counts a container's finished run against its owner's
// recommendation, so that a workload whose runs fit a smaller profile again
// moves back down (readmit.Store.RecordRun). A *readmit.Marker is one; the
// link uses its own Marker unless WithRunRecorder gives another.
type RunRecorder interface {
	RecordEnd(ctx context.Context, e readmit.RunEnd) ([]readmit.Rule, error)
}

// WithRunRecorder counts finished runs with r instead of the link's Marker.
func WithRunRecorder(r RunRecorder) Option { return func(o *options) { o.runs = r } }

// queueEnd hands a container's end to Run without blocking the
// deregistration path. Ends without pod identity (podman, containerd
// without Kubernetes) or without a peak say nothing about a workload.
func (l *link) queueEnd(e agent.End) {
	if e.Container.PodNamespace == "" || e.Container.PodName == "" || e.PeakBytes == 0 {
		return
	}
	select {
	case l.ends <- e:
	default:
		l.log.WithField("pod", e.Container.PodNamespace+"/"+e.Container.PodName).Warn("run queue full: finished run not counted")
	}
}

// countRuns records the finished runs one at a time until ctx ends: runs of
// one owner write the same ConfigMap, so one writer keeps them from
// conflicting.
func (l *link) countRuns(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-l.ends:
			l.recordRun(ctx, e)
		}
	}
}

func (l *link) recordRun(ctx context.Context, e agent.End) {
	log := l.log.WithFields(logrus.Fields{"pod": e.Container.PodNamespace + "/" + e.Container.PodName,
		"container": e.Container.ContainerName, "profile": e.Profile, "peak_bytes": e.PeakBytes})
	dropped, err := l.runs.RecordEnd(ctx, toRunEnd(e))
	switch {
	case err != nil && ctx.Err() == nil:
		log.WithError(err).Warn("finished run not counted against the recommendation")
	case len(dropped) > 0:
		log.WithField("rules", len(dropped)).Info("recommendation decayed: the workload's next pods ask for the smaller profile")
	}
}

func toRunEnd(e agent.End) readmit.RunEnd {
	return readmit.RunEnd{PodNamespace: e.Container.PodNamespace, PodName: e.Container.PodName, PodUID: e.Container.PodUID,
		ContainerName: e.Container.ContainerName, PeakBytes: e.PeakBytes, FitsProfile: e.Fits, RanOut: ranOut(e)}
}

// ranOut reports whether a run's peak reached its instance's memory: the
// driver had nothing left to give it.
func ranOut(e agent.End) bool {
	for _, p := range e.Profiles {
		if defaults.ProfileLabel(p.Name) == defaults.ProfileLabel(e.Profile) {
			return p.MemoryBytes > 0 && e.PeakBytes >= p.MemoryBytes
		}
	}
	return false
}

// podHints reads a container's pod for the predictor: the time its
// eviction needs and its horizon (readmit.PodHints). A pod that cannot be
// read, or a bad annotation, leaves the defaults (logged).
func (l *link) podHints(ctx context.Context, reg telemetry.Registration, restart time.Duration) (predictor.Hints, bool) {
	log := l.log.WithField("pod", reg.PodNamespace+"/"+reg.PodName)
	pod, err := l.cs.CoreV1().Pods(reg.PodNamespace).Get(ctx, reg.PodName, metav1.GetOptions{})
	if err != nil || (reg.PodUID != "" && string(pod.UID) != reg.PodUID) {
		log.WithError(err).Debug("predictor hints: pod not read; defaults kept")
		return predictor.Hints{}, false
	}
	h, err := readmit.PodHints(pod, restart)
	if err != nil {
		log.WithError(err).Warn("predictor hints: defaults kept")
		return predictor.Hints{}, false
	}
	return h, true
}
