package predictor

import (
	"fmt"
	"math"
)

// Hints are what a workload says about itself once it is known, after the
// predictor has started: how long an eviction of its pod needs (its
// termination grace period plus a restart) and, when it declares one, when
// it ends. Zero fields leave the setting as it is.
type Hints struct {
	// EvictionTime is in T units (seconds in the agent).
	EvictionTime float64
	// Horizon is the T at which the workload ends (seconds since the
	// container started, in the agent).
	Horizon float64
}

func (h Hints) validate() error {
	for _, v := range []float64{h.EvictionTime, h.Horizon} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("predictor: hints %+v: want finite non-negative numbers", h)
		}
	}
	return nil
}

// SetHints applies h to a running predictor; a horizon already past is
// ignored by the decision, as any horizon is once reached.
func (p *Predictor) SetHints(h Hints) error {
	if err := h.validate(); err != nil {
		return err
	}
	if h.EvictionTime > 0 {
		p.cfg.EvictionTime = h.EvictionTime
	}
	if h.Horizon > 0 {
		p.cfg.Horizon = h.Horizon
	}
	return nil
}

// Hint applies h to a tracked container's predictor; false when the
// container is not tracked (it ended, or has not started).
func (t *Tracker) Hint(id string, h Hints) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[id]
	if !ok {
		return false, nil
	}
	return true, p.SetHints(h)
}
