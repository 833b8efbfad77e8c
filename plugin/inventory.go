package plugin

import (
	"context"
	"slices"
)

// Device is one MIG instance as the kubelet sees it.
type Device struct {
	// ID is the MIG UUID, "MIG-<uuid>": the kubelet's device ID, and the value
	// of NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES.
	ID string
	// CDIName is the instance's qualified CDI name, e.g. "migpro.dev/mig=MIG-…".
	// An instance is advertised only once its spec exists, so it is never
	// empty; Allocate refuses a device without one.
	CDIName string
	// Healthy is false after an Xid on the instance's GPU.
	Healthy bool
}

// Inventory is what the agent tells the device plugins. Implementations must
// be safe for concurrent use; Devices is called on every Allocate, so it
// should be cheap (a copy under a lock).
type Inventory interface {
	// Profiles lists the MIG profiles to advertise, e.g. "1g.10gb", one
	// plugin each, including profiles with no instance yet (so pods can ask
	// for them and provisioning can start).
	Profiles() []string
	// Devices lists the advertised instances of one profile: those that exist
	// and have a CDI spec, minus those being destroyed.
	Devices(profile string) []Device
	// Changes is signalled whenever Profiles or any Devices list may have
	// changed. The Manager is its only reader; a send should not block (a
	// channel of capacity 1 and a non-blocking send coalesce bursts).
	Changes() <-chan struct{}
}

// AllocateCheck is the agent's last word on an allocation, called with the
// profile and the device IDs of one container after the plugin has checked
// that they are advertised and healthy. A non-nil error refuses the whole
// allocation: use it to refuse an instance that has started to be destroyed
// and to record the instance as in use before answering. An error that is a
// gRPC status is passed through; any other becomes FailedPrecondition.
type AllocateCheck func(ctx context.Context, profile string, ids []string) error

// Preference chooses size device IDs from available for one container; the
// result must hold every ID of mustInclude. The agent prefers the instances
// whose reuse keeps the most layouts reachable. A result that breaks these
// rules is replaced by [DefaultPreference]'s.
type Preference func(profile string, available, mustInclude []string, size int) []string

// DefaultPreference takes mustInclude, then the rest of available in sorted
// order, so the choice is stable.
func DefaultPreference(_ string, available, mustInclude []string, size int) []string {
	out := make([]string, 0, size)
	taken := make(map[string]bool, size)
	for _, id := range mustInclude {
		if len(out) < size && !taken[id] {
			out = append(out, id)
			taken[id] = true
		}
	}
	rest := slices.Clone(available)
	slices.Sort(rest)
	for _, id := range rest {
		if len(out) == size {
			break
		}
		if !taken[id] {
			out = append(out, id)
			taken[id] = true
		}
	}
	return out
}

// validPreference reports whether got is a legal answer to the request.
func validPreference(got, available, mustInclude []string, size int) bool {
	if len(got) != size {
		return false
	}
	avail := make(map[string]bool, len(available))
	for _, id := range available {
		avail[id] = true
	}
	seen := make(map[string]bool, len(got))
	for _, id := range got {
		if !avail[id] || seen[id] {
			return false
		}
		seen[id] = true
	}
	for _, id := range mustInclude {
		if !seen[id] {
			return false
		}
	}
	return true
}
