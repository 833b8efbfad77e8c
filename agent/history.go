package agent

import (
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/predictor"
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

// End is a container's end, with what moving a workload down needs: who
// the container was, the instance it ran on, the peak it reached there, and
// the profiles its GPU offers.
type End struct {
	Container telemetry.Registration `json:"container"`
	// UUID and Profile are the instance it ran on; empty when the instance
	// is already gone.
	UUID    string `json:"uuid,omitempty"`
	Profile string `json:"profile,omitempty"`
	// PeakBytes is the highest memory the shim or NVML saw in use.
	PeakBytes uint64 `json:"peakBytes"`
	// Marked is set when the predictor marked the container during the run:
	// it was moved or is being moved up, so its end says nothing about what
	// it needs.
	Marked bool `json:"marked,omitempty"`
	// Profiles are the profiles of the instance's GPU, and Margin the
	// headroom the predictor keeps above a forecast when it picks one.
	Profiles []estimator.ProfileSize `json:"-"`
	Margin   float64                 `json:"-"`
}

// Fits reports whether the run's peak, with Margin, fits profile (a name
// such as "1g.5gb", or its resource label "1g.10gb.me") on the GPU it ran
// on. A marked run, or a profile the GPU does not offer, fits nothing.
func (e End) Fits(profile string) bool {
	if e.Marked || e.PeakBytes == 0 {
		return false
	}
	need := estimator.Need{Bytes: e.PeakBytes, Margin: e.Margin}.Total()
	for _, p := range e.Profiles {
		if defaults.ProfileLabel(p.Name) == defaults.ProfileLabel(profile) {
			return need <= p.MemoryBytes
		}
	}
	return false
}

// OnContainerEnd subscribes fn to every container's end (its poststop hook,
// or the poller finding its processes gone). fn runs on the deregistration
// path and must not block. Call it before Run.
func (a *Agent) OnContainerEnd(fn func(End)) {
	if a.watch == nil {
		return
	}
	a.watch.mu.Lock()
	a.watch.onEnd = append(a.watch.onEnd, fn)
	a.watch.mu.Unlock()
}

// onContainerEnd stops the container's predictor, records its peak, and
// tells the OnContainerEnd subscribers.
func (w *watch) onContainerEnd(reg telemetry.Registration, peak uint64) {
	// started goes first, then the predictor: a first sample's start that
	// is still running then either sees started gone and stops what it
	// started, or started its predictor before this Stop (watch.start).
	w.mu.Lock()
	_, marked := w.marks[reg.ID]
	delete(w.started, reg.ID)
	delete(w.marks, reg.ID)
	subs := append([]func(End){}, w.onEnd...)
	w.mu.Unlock()
	w.tracker.Stop(reg.ID)
	end := End{Container: reg, PeakBytes: peak, Marked: marked, Margin: w.margin()}
	owner := ""
	if len(reg.MIGUUIDs) > 0 {
		end.UUID = reg.MIGUUIDs[0]
		if in, err := w.a.part.Find(end.UUID); err == nil {
			owner, end.Profile = in.Owner, in.Profile
			end.Profiles = w.profileSizes(in.GPU)
		}
	}
	for _, fn := range subs {
		fn(end)
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

// margin is the headroom the predictor keeps above a forecast when it picks
// a profile; a run fits a profile only with the same headroom.
func (w *watch) margin() float64 {
	c := predictor.Config{}
	if w.a.cfg.Predictor != nil {
		c = w.a.cfg.Predictor(c)
	}
	if c.Margin == 0 {
		return defaultMargin
	}
	return c.Margin
}

// defaultMargin is predictor.Config's default Margin.
const defaultMargin = 0.10
