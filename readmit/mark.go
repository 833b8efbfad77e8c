package readmit

import (
	"errors"
	"time"
)

// Mark is what the Marker needs from a predictor mark: which container of
// which pod, the profile it runs on, and the one it should move to. The agent
// fills it from its own agent.Mark.
type Mark struct {
	PodNamespace  string
	PodName       string
	PodUID        string // optional; when set, a mark for an older pod of that name is ignored
	ContainerName string
	// FromProfile is the instance's profile now, e.g. "1g.5gb"; optional
	// when the container requests a single MIG resource.
	FromProfile string
	// ToProfile is the recommended profile; empty when even the largest
	// profile is too small (Fits false).
	ToProfile string
	// ForecastBytes is the predicted peak; Reason is the predictor's reason.
	ForecastBytes uint64
	Reason        string
	Fits          bool
}

// errNoPod is returned for a mark without pod identity (a container not run
// by Kubernetes); Handle ignores such marks.
var errNoPod = errors.New("mark has no pod identity")

func (m Mark) validate() error {
	if m.PodNamespace == "" || m.PodName == "" {
		return errNoPod
	}
	return nil
}

// PredictedOOM is the JSON value of the AnnotationPredictedOOM annotation.
type PredictedOOM struct {
	Container     string    `json:"container"`
	From          string    `json:"from"`
	To            string    `json:"to,omitempty"`
	ForecastBytes uint64    `json:"forecastBytes"`
	Reason        string    `json:"reason,omitempty"`
	Node          string    `json:"node,omitempty"`
	At            time.Time `json:"at"`
	// Mode is the mode the mark was handled in (advise: nothing evicted).
	Mode Mode `json:"mode,omitempty"`
}
