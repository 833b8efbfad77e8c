package client

// The paths of the local API.
const (
	PathAlloc      = "/v1/alloc"
	PathFree       = "/v1/free"
	PathStatus     = "/v1/status"
	PathProfiles   = "/v1/profiles"
	PathMarks      = "/v1/marks"
	PathTop        = "/v1/top"
	PathContainers = "/v1/containers"
)

// AllocRequest asks for an instance of a profile.
type AllocRequest struct {
	Profile string `json:"profile"`
	// Owner labels the holder in status pictures (default "local").
	Owner string `json:"owner,omitempty"`
	// Larger accepts an instance of another profile that holds this one (at
	// least its compute slices and memory): when the profile itself would
	// have to wait, the smallest such instance, of any profile or GPU
	// model; and where the profile would leave a compute slice with no
	// memory slot (an A100's 3g.20gb at slot 0), the wider profile of the
	// same memory slots (4g.20gb). The answer's Profile says which.
	// Without it the agent serves exactly the profile asked for.
	Larger bool `json:"larger,omitempty"`
}

// AllocResponse is the instance given, with the name to pass to
// `podman run --device` or containerd's WithCDIDevices.
type AllocResponse struct {
	UUID    string `json:"uuid"`
	CDIName string `json:"cdiName"`
	Profile string `json:"profile"`
	GPU     int    `json:"gpu"`
	// Placement is the memory slots the instance holds, as status shows it.
	Placement Placement `json:"placement"`
	Steps     int       `json:"steps"` // NVML creates and destroys it took
	// Lease names this holding: a free that carries it releases the
	// instance only while this holder still has it, so a retried free never
	// touches the instance's next holder.
	Lease string `json:"lease,omitempty"`
}

// FreeRequest releases and destroys an instance, named by its CDI name or
// MIG UUID.
type FreeRequest struct {
	Name string `json:"name"`
	// Lease, from the alloc's answer, makes the free idempotent for this
	// holder: once the holder no longer holds the instance it is a no-op.
	Lease string `json:"lease,omitempty"`
}

// Status is the whole node: GPUs with their reachability, and instances.
type Status struct {
	GPUs      []GPU            `json:"gpus"`
	Instances []StatusInstance `json:"instances"`
	// Pending counts, by profile, the requests known to wait for this
	// node: pods it could serve once it has room, and local callers told
	// to wait. The placement policy keeps room for them.
	Pending map[string]int `json:"pending,omitempty"`
	// Reserved is the GPU held for a request that waited too long, if any.
	Reserved *Reservation `json:"reserved,omitempty"`
}

// GPU is one GPU with its reachability: how many of its maximal layouts
// (Maximal) the instances it holds still leave reachable (Reachable).
type GPU struct {
	Index     int    `json:"index"`
	Model     string `json:"model"`
	UUID      string `json:"uuid"`
	Slots     int    `json:"slots"`
	Slices    int    `json:"slices"`
	Reachable int    `json:"reachable"`
	Maximal   int    `json:"maximal"`
}

// Placement is where an instance sits: its first memory slot and how many
// slots it spans.
type Placement struct {
	Start int `json:"start"`
	Size  int `json:"size"`
}

// Reservation is a GPU held for a request that waited too long.
type Reservation struct {
	GPU     int    `json:"gpu"`
	Profile string `json:"profile"`
	// Placement is the slots held; nil holds the whole GPU.
	Placement *Placement `json:"placement,omitempty"`
}

// The states an instance is in, as StatusInstance.State says.
const (
	StateIdle       = "idle"
	StateInUse      = "in-use"
	StateCreating   = "creating"
	StateDestroying = "destroying"
)

// NoComputeInstance is StatusInstance.CIID of a GPU instance that has no
// compute instance yet.
const NoComputeInstance = -1

// StatusInstance is one instance as status shows it.
type StatusInstance struct {
	GPU       int       `json:"gpu"`
	GIID      int       `json:"gi"`
	CIID      int       `json:"ci"`
	ProfileID int       `json:"profileId"`
	Placement Placement `json:"placement"`
	// UUID is "MIG-…", empty while the instance has no compute instance.
	UUID    string `json:"uuid,omitempty"`
	Profile string `json:"profile"`
	// State is one of the State constants.
	State string `json:"state"`
	// Owner says who holds an in-use instance; empty when idle.
	Owner   string `json:"owner,omitempty"`
	CDIName string `json:"cdiName,omitempty"`
	Healthy bool   `json:"healthy"`
	Pod     string `json:"pod,omitempty"`
}

// Mark is the predictor's verdict on one container, as GET /v1/marks
// answers it (by container id).
type Mark struct {
	// Reason says why the container was marked.
	Reason string `json:"reason"`
	// At is the sample time of the mark; Samples how many were seen.
	At      float64 `json:"at"`
	Samples int     `json:"samples"`
	// Forecast is the peak the container is expected to need, in bytes.
	Forecast uint64 `json:"forecast"`
	// Confidence is the probability that usage exceeds capacity.
	Confidence float64 `json:"confidence"`
	// Horizon is the horizon used, zero when unknown; TimeToOOM the time
	// from the mark to the forecast's crossing of capacity.
	Horizon   float64 `json:"horizon,omitempty"`
	TimeToOOM float64 `json:"timeToOOM,omitempty"`
	// Profile is the recommended readmission profile; Fits is false when
	// even the largest profile is short.
	Profile string `json:"profile,omitempty"`
	Fits    bool   `json:"fits"`
}

// Error is the body of every error answer: one line for the user.
type Error struct {
	Error string `json:"error"`
}
