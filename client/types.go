package client

import (
	"github.com/migpro/migpro/partitioner"
)

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
}

// AllocResponse is the instance given, with the name to pass to
// `podman run --device` or containerd's WithCDIDevices.
type AllocResponse struct {
	UUID    string `json:"uuid"`
	CDIName string `json:"cdiName"`
	Profile string `json:"profile"`
	GPU     int    `json:"gpu"`
	Start   int    `json:"start"`
	Size    int    `json:"size"`
	Steps   int    `json:"steps"` // NVML creates and destroys it took
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
	GPUs      []partitioner.GPU `json:"gpus"`
	Instances []StatusInstance  `json:"instances"`
	// Pending counts, by profile, the requests known to wait for this
	// node: pods it could serve once it has room, and local callers told
	// to wait. The placement policy keeps room for them.
	Pending map[string]int `json:"pending,omitempty"`
	// Reserved is the GPU held for a request that waited too long, if any.
	Reserved *partitioner.Reservation `json:"reserved,omitempty"`
}

// StatusInstance is one instance as status shows it.
type StatusInstance struct {
	partitioner.Instance
	CDIName string `json:"cdiName,omitempty"`
	Healthy bool   `json:"healthy"`
	Pod     string `json:"pod,omitempty"`
}

// Error is the body of every error answer: one line for the user.
type Error struct {
	Error string `json:"error"`
}
