package predictor

import (
	"fmt"
	"sync"
)

// Tracker keeps one Predictor per container for the agent. Unlike a
// Predictor it is safe for concurrent use, because telemetry for different
// containers arrives on different goroutines.
type Tracker struct {
	mu sync.Mutex
	m  map[string]*Predictor
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker { return &Tracker{m: map[string]*Predictor{}} }

// Start begins tracking a container with its own configuration (capacity is
// the container's instance). Starting a tracked container again is an error,
// so a re-registration cannot silently drop what was learned.
func (t *Tracker) Start(id string, cfg Config) error {
	p, err := New(cfg)
	if err != nil {
		return fmt.Errorf("container %s: %w", id, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.m[id]; dup {
		return fmt.Errorf("container %s: already tracked", id)
	}
	t.m[id] = p
	return nil
}

// Observe feeds one sample to a container's predictor. Samples for untracked
// containers are ignored: telemetry may race with Start and Stop.
func (t *Tracker) Observe(id string, s Sample) (Mark, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[id]
	if !ok {
		return Mark{}, false
	}
	return p.Observe(s)
}

// Stop ends tracking and returns the container's peak usage, which is what
// the estimator's history records for the workload.
func (t *Tracker) Stop(id string) (peak uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[id]
	if !ok {
		return 0, false
	}
	delete(t.m, id)
	return p.Peak(), true
}

// Marked returns a tracked container's decision, if it has been marked.
func (t *Tracker) Marked(id string) (Mark, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.m[id]; ok {
		return p.Marked()
	}
	return Mark{}, false
}
