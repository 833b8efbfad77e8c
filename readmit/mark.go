package readmit

import (
	"errors"
	"time"

	"github.com/migpro/migpro/predictor"
)

// The Marker takes the predictor's own mark (predictor.Mark) as the agent
// hands it on: which container of which pod (PodNamespace, PodName, PodUID,
// ContainerName), the profile it runs on (InstanceProfile; optional when the
// container requests a single MIG resource), the one it should move to
// (Profile; empty when even the largest profile is too small, Fits false),
// the predicted peak (Forecast) and the predictor's Reason.

// errNoPod is returned for a mark without pod identity (a container not run
// by Kubernetes); Handle ignores such marks.
var errNoPod = errors.New("mark has no pod identity")

func validateMark(m predictor.Mark) error {
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
