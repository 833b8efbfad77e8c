package predictor

// Reason says why a container was marked.
type Reason string

const (
	// ReasonHorizon: the upper bound at the known horizon exceeds capacity.
	ReasonHorizon Reason = "forecast-exceeds-capacity-at-horizon"
	// ReasonTimeToOOM: the upper bound crosses capacity sooner than the lead time.
	ReasonTimeToOOM Reason = "time-to-oom-within-lead"
	// ReasonOverCapacity: usage already reached capacity, with no warning.
	ReasonOverCapacity Reason = "usage-at-capacity"
)

// Mark is the one mark of the project: the container should move to a
// larger instance. The predictor fills the verdict; the agent, which knows
// the container, adds who it is and where it runs before it hands the mark
// on (to readmission, and to GET /v1/marks through the client's wire type).
type Mark struct {
	Reason Reason `json:"reason"`
	// At is the sample time of the mark; Samples how many were seen.
	At      float64 `json:"at"`
	Samples int     `json:"samples"`
	// Forecast is the peak the container is expected to need, in bytes: the
	// upper bound at the horizon or, when the horizon is unknown, at the
	// later of the crossing and twice the elapsed time (a run is expected to
	// last as long again as it has so far).
	Forecast uint64 `json:"forecast"`
	// Confidence is the fitted model's probability (normal residuals) that
	// usage exceeds capacity at the horizon or, without one, by the end of
	// the lead time; 1 when usage already reached capacity.
	Confidence float64 `json:"confidence"`
	// Horizon is the horizon used, zero when unknown; TimeToOOM is then the
	// T distance from the mark to the bound's crossing of capacity.
	Horizon   float64 `json:"horizon,omitempty"`
	TimeToOOM float64 `json:"timeToOOM,omitempty"`
	// Profile is the recommended readmission profile, empty without a
	// profile list; Fits is false when even the largest profile is short.
	Profile string `json:"profile,omitempty"`
	Fits    bool   `json:"fits"`

	// Who and where, filled by the agent (a Predictor sees only a series);
	// none of them is in the JSON.
	//
	// ContainerID is the container's runtime ID. PodNamespace, PodName and
	// ContainerName name it in Kubernetes, empty for a container Kubernetes
	// does not run; PodUID, when set, makes readmission ignore the mark for
	// a newer pod of that name.
	ContainerID   string `json:"-"`
	PodNamespace  string `json:"-"`
	PodName       string `json:"-"`
	PodUID        string `json:"-"`
	ContainerName string `json:"-"`
	// InstanceUUID and InstanceProfile are the MIG instance it runs on now,
	// e.g. "1g.5gb"; Profile above is the one to move it to.
	InstanceUUID    string `json:"-"`
	InstanceProfile string `json:"-"`
}
