package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/telemetry"
)

// watch connects telemetry to the predictor: every container that registers
// gets its own predictor sized to its instance, fed the merged usage
// telemetry publishes (shim and NVML); a mark is logged and kept for status.
type watch struct {
	a       *Agent
	svc     *telemetry.Service
	tracker predictors
	history *estimator.History

	mu      sync.Mutex
	started map[string]*watched
	marks   map[string]predictor.Decision
	onMark  []func(Mark)
	onEnd   []func(End)
	// failOpen waits for svc, made when the agent opens.
	failOpen []func(telemetry.Registration, string)
	hints    func(context.Context, telemetry.Registration) (predictor.Hints, bool)
}

// newWatch is the watch of an agent not open yet: subscribers may join
// before Run; startTelemetry gives it its service.
func newWatch(a *Agent) *watch {
	return &watch{a: a, tracker: predictor.NewTracker(), started: map[string]*watched{}, marks: map[string]predictor.Decision{}}
}

// SetPredictorHints gives the agent a source of what a container's
// workload says about itself (the time an eviction needs, a horizon): fn
// runs once per container, off the telemetry path, after its predictor
// starts. Call it before Run.
func (a *Agent) SetPredictorHints(fn func(context.Context, telemetry.Registration) (predictor.Hints, bool)) {
	if a.watch == nil {
		return
	}
	a.watch.mu.Lock()
	a.watch.hints = fn
	a.watch.mu.Unlock()
}

// applyHints asks the hint source about a started container and hands the
// answer to its predictor.
func (w *watch) applyHints(id string) {
	w.mu.Lock()
	fn := w.hints
	w.mu.Unlock()
	h, ok := w.tracker.(interface {
		Hint(string, predictor.Hints) (bool, error)
	})
	reg, _ := w.svc.Registration(id)
	if fn == nil || !ok || reg.PodName == "" {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		hints, found := fn(ctx, reg)
		if !found {
			return
		}
		if _, err := h.Hint(id, hints); err != nil {
			w.a.log.WithError(err).WithField("container", id).Warn("predictor hints not applied")
		}
	}()
}

// predictors is what the watch needs of the per-container predictors
// (predictor.Tracker); a test wraps it to end a container while a sample is
// being judged.
type predictors interface {
	Start(id string, cfg predictor.Config) error
	Observe(id string, s predictor.Sample) (predictor.Decision, bool)
	Stop(id string) (peak uint64, ok bool)
}

// Mark is a container the predictor expects to run out of memory on its
// instance, with what readmission needs: who the container is, where it
// runs, and the profile to move it to.
type Mark struct {
	Container telemetry.Registration `json:"container"`
	// UUID and Profile are the instance it runs on now.
	UUID     string             `json:"uuid"`
	Profile  string             `json:"profile"`
	Decision predictor.Decision `json:"decision"`
}

// OnMark subscribes fn to every mark; it runs once per container, off the
// telemetry ingest path. Call it before Run.
func (a *Agent) OnMark(fn func(Mark)) {
	if a.watch == nil {
		return
	}
	a.watch.mu.Lock()
	a.watch.onMark = append(a.watch.onMark, fn)
	a.watch.mu.Unlock()
}

// OnFailOpen subscribes fn to every container the hook let start without
// telemetry (fail-open), with its registration and the hook's reason. The
// agent has already logged one line for it. Call it before Run.
func (a *Agent) OnFailOpen(fn func(c telemetry.Registration, reason string)) {
	if a.watch == nil {
		return
	}
	a.watch.mu.Lock()
	defer a.watch.mu.Unlock()
	if a.watch.svc == nil {
		a.watch.failOpen = append(a.watch.failOpen, fn)
		return
	}
	a.watch.svc.OnFailOpen(fn)
}

// watched is a container whose predictor the watch feeds: telemetry keeps
// its memory, the watch only when it last fed the predictor.
type watched struct {
	lastObservedAt time.Time
}

func (a *Agent) startTelemetry(reg prometheus.Registerer) error {
	svc, err := telemetry.New(telemetry.WithStateDir(a.cfg.TelemetryDir), telemetry.WithLogger(a.log), telemetry.WithRegisterer(reg))
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	if n, err := svc.Restore(); err != nil {
		a.log.WithError(err).Warn("telemetry: some container sockets could not be restored")
	} else if n > 0 {
		a.log.WithField("containers", n).Info("telemetry: restored container sockets")
	}
	w := a.watch
	if w.history, err = estimator.OpenHistory(a.historyPath()); err != nil {
		a.log.WithError(err).Warn("workload history unreadable: peaks will not be recorded")
	}
	svc.OnUsage(w.onUsage)
	svc.OnDeregister(w.onContainerEnd)
	if reg != nil {
		reg.MustRegister(containerMemoryCollector{w})
	}
	w.mu.Lock()
	w.svc = svc
	for _, fn := range w.failOpen {
		svc.OnFailOpen(fn)
	}
	w.failOpen = nil
	w.mu.Unlock()
	return nil
}

// InstanceMemory adapts the GPU layer to the telemetry poller.
func (a *Agent) InstanceMemory(uuid string) (used, total uint64, err error) {
	in, err := a.part.Find(uuid)
	if err != nil {
		return 0, 0, err
	}
	dev, ok := a.part.Device(in.GPU)
	if !ok {
		return 0, 0, fmt.Errorf("no GPU %d", in.GPU)
	}
	m, err := dev.InstanceMemory(in.GIID)
	return m.Used, m.Total, err
}

func (w *watch) run(ctx context.Context) error {
	w.svc.RunPoller(ctx, w.a, w.a.cfg.PollEvery)
	return w.svc.Close()
}

// onUsage runs on the telemetry ingest path: it must stay cheap.
func (w *watch) onUsage(id string, u telemetry.Usage) {
	w.mu.Lock()
	st, ok := w.started[id]
	needStart := !ok // the container's first sample starts its predictor
	if !ok {
		st = &watched{}
		w.started[id] = st
	}
	if !u.At.After(st.lastObservedAt) && !needStart {
		w.mu.Unlock()
		return // the predictor needs time to move forward
	}
	st.lastObservedAt = u.At
	w.mu.Unlock()
	if needStart && !w.start(id, st) {
		return
	}
	s := predictor.Sample{T: u.At.Sub(u.Since).Seconds(), Used: w.used(u), Requested: u.RequestedBytes, Allocs: u.Allocs}
	if d, marked := w.tracker.Observe(id, s); marked {
		w.mu.Lock()
		if w.started[id] != st {
			w.mu.Unlock()
			return // the container ended meanwhile: its mark has no one to move
		}
		w.marks[id] = d
		subs := append([]func(Mark){}, w.onMark...)
		w.mu.Unlock()
		w.a.metrics.marks.Inc()
		w.a.log.WithFields(logrus.Fields{"container": id, "reason": d.Reason, "forecast": d.Forecast, "profile": d.Profile}).
			Warn("predicted out of memory: container should move to a larger instance")
		if len(subs) > 0 {
			go w.notifyMark(id, d, subs)
		}
	}
}

// used is the memory the predictor sees. The shim runs inside the container
// and may lie; NVML is the driver's word. The shim's figure sharpens NVML's
// (it is the program's own allocations, without the context and other
// processes) but never outvotes it: it counts only up to what NVML last
// reported, so one datagram claiming 5 GiB on an instance the driver sees
// empty moves nothing. Until NVML has reported, nothing counts. Simulated
// GPUs are the exception: their driver cannot see what a container
// allocates, so there the shim's figure stands alone.
func (w *watch) used(u telemetry.Usage) uint64 {
	if w.a.cfg.Simulate != "" {
		return max(u.ShimBytes, u.NVMLBytes)
	}
	if u.ShimSeen {
		return min(u.ShimBytes, u.NVMLBytes)
	}
	return u.NVMLBytes
}

// notifyMark hands a mark to the subscribers with the container's identity.
func (w *watch) notifyMark(id string, d predictor.Decision, subs []func(Mark)) {
	m := Mark{Decision: d}
	m.Container, _ = w.svc.Registration(id)
	if len(m.Container.MIGUUIDs) > 0 {
		m.UUID = m.Container.MIGUUIDs[0]
		if in, err := w.a.part.Find(m.UUID); err == nil {
			m.Profile = in.Profile
		}
	}
	for _, fn := range subs {
		fn(m)
	}
}

// start starts the predictor of container id on its first sample, st. The
// container may end meanwhile (its poststop hook racing a poll): then
// nothing stays behind, neither the predictor nor st. A container that
// cannot have a predictor keeps st, so it is tried (and logged) once. It
// reports whether the predictor runs.
func (w *watch) start(id string, st *watched) bool {
	err := w.startPredictor(id)
	gone := errors.Is(err, errNotRegistered)
	w.mu.Lock()
	current := w.started[id] == st
	if gone && current {
		delete(w.started, id)
	}
	w.mu.Unlock()
	switch {
	case gone:
		return false // ended before its first sample was handled
	case err != nil:
		w.a.log.WithError(err).WithField("container", id).Warn("predictor not started")
		return false
	case !current:
		// onContainerEnd removed st before this start: its Stop may have
		// come before the Start, so stop here.
		w.tracker.Stop(id)
		return false
	}
	w.applyHints(id)
	return true
}

// errNotRegistered: the container is no longer in the telemetry service's
// list.
var errNotRegistered = errors.New("container not registered")

// startPredictor sizes a container's predictor to its instance and the
// profiles of its GPU.
func (w *watch) startPredictor(id string) error {
	reg, ok := w.svc.Registration(id)
	if !ok {
		return errNotRegistered
	}
	if len(reg.MIGUUIDs) == 0 {
		return fmt.Errorf("container has no MIG instance")
	}
	uuid := reg.MIGUUIDs[0]
	_, total, err := w.a.InstanceMemory(uuid)
	if err != nil {
		return err
	}
	in, err := w.a.part.Find(uuid)
	if err != nil {
		return err
	}
	sizes := w.profileSizes(in.GPU)
	if sizes == nil {
		return fmt.Errorf("no profiles of GPU %d", in.GPU)
	}
	// T is seconds since the container registered, so the series includes
	// model loading: the settings for seconds (loading grace, 2 s bins).
	adjust := w.a.cfg.Predictor
	if adjust == nil {
		adjust = predictor.ForSeconds
	}
	return w.tracker.Start(id, adjust(predictor.Config{Capacity: total, Profiles: sizes}))
}

// profileSizes are the profiles GPU gpu offers, for sizing; nil when they
// cannot be read.
func (w *watch) profileSizes(gpu int) []estimator.ProfileSize {
	dev, ok := w.a.part.Device(gpu)
	if !ok {
		return nil
	}
	profiles, err := dev.Profiles()
	if err != nil {
		return nil
	}
	sizes := make([]estimator.ProfileSize, 0, len(profiles))
	for _, p := range profiles {
		sizes = append(sizes, estimator.ProfileSize{Name: p.Name, MemoryBytes: p.MemoryMiB << 20, Slices: p.Slices})
	}
	return sizes
}

// Marks returns the containers marked so far, by container id.
func (w *watch) Marks() map[string]client.Mark {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]client.Mark, len(w.marks))
	for k, v := range w.marks {
		out[k] = wireMark(v)
	}
	return out
}

// telemetryRoutes serves the hook's registration, migctl top, and marks.
func (w *watch) routes(mux *http.ServeMux) {
	h := w.svc.Handler()
	mux.Handle("POST "+client.PathContainers, w.heldInstancesOnly(h))
	mux.Handle(client.PathContainers, h)
	mux.Handle(client.PathContainers+"/", h)
	mux.Handle("GET "+client.PathTop, h)
	mux.HandleFunc("GET "+client.PathMarks, func(rw http.ResponseWriter, _ *http.Request) { writeJSON(rw, http.StatusOK, w.Marks()) })
}

// heldInstancesOnly lets a registration through with only the MIG instances
// that exist on this node and are held (by a pod or a local user): the
// container names them (its environment), and a name of an instance it was
// not given, or of none at all, must not tie its telemetry, and its marks,
// to that instance. A registration left with none is refused, and the hook
// then starts the container without telemetry.
func (w *watch) heldInstancesOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var reg telemetry.Registration
		dec := json.NewDecoder(http.MaxBytesReader(rw, r.Body, telemetry.MaxRequestBytes))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&reg); err != nil {
			writeErr(rw, http.StatusBadRequest, fmt.Errorf("decoding registration: %w", err))
			return
		}
		var held, refused []string
		for _, u := range reg.MIGUUIDs {
			if in, err := w.a.part.Find(u); err == nil && in.State == partitioner.InUse {
				held = append(held, u)
			} else {
				refused = append(refused, u)
			}
		}
		if len(refused) > 0 {
			w.a.log.WithFields(logrus.Fields{"container": reg.ID, "refused": refused}).Warn("registration names MIG instances not held on this node; ignoring them")
		}
		if len(held) == 0 {
			writeErr(rw, http.StatusBadRequest, fmt.Errorf("registration of %q names no MIG instance held on this node", reg.ID))
			return
		}
		reg.MIGUUIDs = held
		body, err := json.Marshal(reg)
		if err != nil {
			writeErr(rw, http.StatusInternalServerError, err)
			return
		}
		r2 := r.Clone(r.Context())
		r2.Body, r2.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		next.ServeHTTP(rw, r2)
	})
}
