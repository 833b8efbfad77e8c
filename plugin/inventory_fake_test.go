package plugin

import (
	"slices"
	"sync"
)

// fakeInventory is an in-memory Inventory for the plugin package's own tests
// (only they use it, so it lives in a _test file). Its setters signal Changes
// as the agent does.
type fakeInventory struct {
	mu       sync.Mutex
	profiles []string
	devices  map[string][]Device
	changes  chan struct{}
}

var _ Inventory = (*fakeInventory)(nil)

// newFakeInventory advertises the given profiles, with no devices yet.
func newFakeInventory(profiles ...string) *fakeInventory {
	return &fakeInventory{profiles: slices.Clone(profiles), devices: map[string][]Device{}, changes: make(chan struct{}, 1)}
}

// Profiles implements Inventory.
func (f *fakeInventory) Profiles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.profiles)
}

// Devices implements Inventory.
func (f *fakeInventory) Devices(profile string) []Device {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.devices[profile])
}

// Changes implements Inventory.
func (f *fakeInventory) Changes() <-chan struct{} { return f.changes }

// SetProfiles replaces the advertised profiles.
func (f *fakeInventory) SetProfiles(profiles ...string) {
	f.mu.Lock()
	f.profiles = slices.Clone(profiles)
	f.mu.Unlock()
	f.signal()
}

// Put adds or replaces a device of a profile (create, or health change).
func (f *fakeInventory) Put(profile string, d Device) {
	f.mu.Lock()
	list := f.devices[profile]
	if i := slices.IndexFunc(list, func(x Device) bool { return x.ID == d.ID }); i >= 0 {
		list[i] = d
	} else {
		list = append(list, d)
	}
	f.devices[profile] = list
	f.mu.Unlock()
	f.signal()
}

// Delete removes a device (destroy).
func (f *fakeInventory) Delete(profile, id string) {
	f.mu.Lock()
	f.devices[profile] = slices.DeleteFunc(f.devices[profile], func(x Device) bool { return x.ID == id })
	f.mu.Unlock()
	f.signal()
}

func (f *fakeInventory) signal() {
	select {
	case f.changes <- struct{}{}:
	default:
	}
}
