package agent

import (
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/telemetry"
)

// historyFile is the estimator's store of peaks per workload, next to the
// checkpoint, so `migctl estimate --history` can size the next run.
func (a *Agent) historyPath() string { return filepath.Join(a.cfg.StateDir, "history.json") }

// generatedSuffix matches the parts controllers append to pod names: a
// ReplicaSet's template hash ("7d9f8b6c4") and the pod's random five
// characters ("x2x1z"), or a Job's.
var generatedSuffix = regexp.MustCompile(`(-[a-z0-9]{8,10})?-[a-z0-9]{5}$`)

// workloadKey names the workload a container belongs to, so later runs of
// the same workload find its peak: the pod's namespace and name without the
// controller's generated suffixes, or the label a local user gave migctl
// alloc --owner. Containers with neither have no key.
func workloadKey(reg telemetry.Registration, owner string) string {
	if reg.PodName != "" {
		return reg.PodNamespace + "/" + generatedSuffix.ReplaceAllString(reg.PodName, "")
	}
	if label, ok := strings.CutPrefix(owner, ownerLocal+":"); ok && label != "" {
		return "local/" + label
	}
	return ""
}

// onContainerEnd stops the container's predictor and records its peak.
func (w *watch) onContainerEnd(reg telemetry.Registration, peak uint64) {
	w.tracker.Stop(reg.ID)
	w.mu.Lock()
	delete(w.started, reg.ID)
	delete(w.marks, reg.ID)
	w.mu.Unlock()
	owner := ""
	if len(reg.MIGUUIDs) > 0 {
		if in, err := w.a.part.Find(reg.MIGUUIDs[0]); err == nil {
			owner = in.Owner
		}
	}
	key := workloadKey(reg, owner)
	if key == "" || peak == 0 || w.history == nil {
		return
	}
	log := w.a.log.WithFields(logrus.Fields{"container": reg.ID, "workload": key, "peak": peak})
	if err := w.history.Record(key, peak, time.Now()); err != nil {
		log.WithError(err).Warn("record workload peak")
		return
	}
	log.Info("recorded workload peak for the estimator")
}
