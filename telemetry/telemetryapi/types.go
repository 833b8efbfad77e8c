package telemetryapi

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Registration is what the hook tells the agent about a starting container.
type Registration struct {
	ID            string   `json:"id"`
	PID           int      `json:"pid"`
	MIGUUIDs      []string `json:"migUUIDs"`
	PodNamespace  string   `json:"podNamespace,omitempty"`
	PodName       string   `json:"podName,omitempty"`
	PodUID        string   `json:"podUID,omitempty"`
	ContainerName string   `json:"containerName,omitempty"`
}

var (
	// The id names a directory, so it must be one harmless path element.
	idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	// MIG-<uuid>, or the older MIG-GPU-<uuid>/<gi>/<ci> form.
	migRE = regexp.MustCompile(`^MIG-[A-Za-z0-9-]{1,80}(/[0-9]{1,3}/[0-9]{1,3})?$`)
	// Kubernetes names, uids and container names are all within this.
	kubeRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,252})?$`)
)

// MaxMIGUUIDs bounds how many instances one container may claim.
const MaxMIGUUIDs = 16

// Validate checks every field; a registration that fails changes nothing.
func (r Registration) Validate() error {
	if !idRE.MatchString(r.ID) {
		return fmt.Errorf("%w: container id %q (want 1-64 of [A-Za-z0-9_.-], starting alphanumeric)", ErrInvalid, r.ID)
	}
	if r.PID < 0 {
		return fmt.Errorf("%w: pid %d", ErrInvalid, r.PID)
	}
	if len(r.MIGUUIDs) > MaxMIGUUIDs {
		return fmt.Errorf("%w: %d MIG UUIDs (limit %d)", ErrInvalid, len(r.MIGUUIDs), MaxMIGUUIDs)
	}
	for _, u := range r.MIGUUIDs {
		if !migRE.MatchString(u) {
			return fmt.Errorf("%w: MIG UUID %q", ErrInvalid, u)
		}
	}
	for name, v := range map[string]string{
		"pod namespace": r.PodNamespace, "pod name": r.PodName, "pod uid": r.PodUID, "container name": r.ContainerName,
	} {
		if v != "" && !kubeRE.MatchString(v) {
			return fmt.Errorf("%w: %s %q", ErrInvalid, name, v)
		}
	}
	return nil
}

// Clone deep-copies r.
func (r Registration) Clone() Registration {
	r.MIGUUIDs = slices.Clone(r.MIGUUIDs)
	return r
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid registration")

// Endpoint is where a registered container's socket lives on the host.
type Endpoint struct {
	ID string `json:"id"`
	// Dir is the host directory the hook bind-mounts read-only at
	// /run/migpro in the container.
	Dir string `json:"dir"`
	// Socket is Dir/telemetry.sock.
	Socket string `json:"socket"`
}

// Source says where a sample came from.
type Source string

const (
	// SourceShim samples come from the LD_PRELOAD shim inside the container:
	// bytes the program holds through the CUDA driver allocation calls.
	SourceShim Source = "shim"
	// SourceNVML samples come from polling the MIG instance's memory: the
	// physical use of the whole instance, CUDA context included.
	SourceNVML Source = "nvml"
)

// TopEntry is one container's line in GET /v1/top.
type TopEntry struct {
	ID            string   `json:"id"`
	PodNamespace  string   `json:"podNamespace,omitempty"`
	PodName       string   `json:"podName,omitempty"`
	PodUID        string   `json:"podUID,omitempty"`
	ContainerName string   `json:"containerName,omitempty"`
	MIGUUIDs      []string `json:"migUUIDs"`
	// CurrentBytes and Source come from the newest sample of either source.
	CurrentBytes uint64 `json:"currentBytes"`
	Source       Source `json:"source,omitempty"`
	// PeakBytes is the higher of the two sources' peaks.
	PeakBytes uint64 `json:"peakBytes"`
	// CapacityBytes is the instance memory (NVML, else the shim's
	// cuMemGetInfo total).
	CapacityBytes uint64 `json:"capacityBytes"`
	ShimBytes     uint64 `json:"shimBytes"`
	NVMLBytes     uint64 `json:"nvmlBytes"`
	Processes     int    `json:"processes"`
	// Allocs and Frees count the shim's successful driver calls over every
	// process the container ran.
	Allocs  uint64 `json:"allocs"`
	Frees   uint64 `json:"frees"`
	Samples uint64 `json:"samples"`
	// LastSample is nil before the first sample.
	LastSample *time.Time `json:"lastSample,omitempty"`
}

// Top is the body of GET /v1/top.
type Top struct {
	Containers []TopEntry `json:"containers"`
}

// FailOpen is the body of POST /v1/containers/{id}/fail-open: the hook
// could not set up a registered container's telemetry and lets it start
// without (fail-open). The agent ends the registration, logs one line and,
// on a cluster, records an Event on the container's pod.
type FailOpen struct {
	// Reason is the hook's error, one line.
	Reason string `json:"reason"`
}

// MaxFailOpenReason bounds the reason the agent keeps, in bytes.
const MaxFailOpenReason = 512
