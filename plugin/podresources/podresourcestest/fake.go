package podresourcestest

import (
	"context"
	"maps"
	"sync"

	"github.com/migpro/migpro/plugin/podresources"
)

// Fake is an in-memory Lister for tests.
type Fake struct {
	mu       sync.Mutex
	assigned map[string]podresources.PodRef
	err      error
}

var _ podresources.Lister = (*Fake)(nil)

// NewFake starts with no assigned device.
func NewFake() *Fake { return &Fake{assigned: map[string]podresources.PodRef{}} }

// Assign records that device id went to pod.
func (f *Fake) Assign(id string, pod podresources.PodRef) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.assigned[id] = pod
}

// Release forgets device id's assignment (its pod ended).
func (f *Fake) Release(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.assigned, id)
}

// SetError makes AssignedDevices fail with err (nil to recover), like a
// kubelet that is down.
func (f *Fake) SetError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// AssignedDevices implements Lister.
func (f *Fake) AssignedDevices(context.Context) (map[string]podresources.PodRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return maps.Clone(f.assigned), nil
}
