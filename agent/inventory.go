package agent

import (
	"sync"

	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/plugin"
)

// inventory is what the device plugins advertise, read from the partitioner
// on every call: complete instances that are idle or in use and have a CDI
// spec. Instances being created or destroyed are left out, so an instance is
// never advertised before its spec exists nor after its destruction starts.
type inventory struct {
	a       *Agent
	changes chan struct{}

	subMu sync.Mutex
	subs  []chan struct{} // other readers (the DRA driver), signalled alike
}

var _ plugin.Inventory = (*inventory)(nil)

func newInventory(a *Agent) *inventory {
	return &inventory{a: a, changes: make(chan struct{}, 1)}
}

func (inv *inventory) Profiles() []string { return inv.a.part.Profiles() }

// Devices runs on every kubelet Allocate and ListAndWatch wake-up: it takes
// the agent's lock once for the whole list, not twice per instance.
func (inv *inventory) Devices(profile string) []plugin.Device {
	insts := inv.a.part.Instances()
	a := inv.a
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []plugin.Device
	for _, in := range insts {
		if in.Profile != profile || !in.Complete() || (in.State != partitioner.Idle && in.State != partitioner.InUse) {
			continue
		}
		name, ok := a.cdiNames[in.UUID]
		if !ok {
			continue
		}
		out = append(out, plugin.Device{ID: in.UUID, CDIName: name, Healthy: a.healthyLocked(in)})
	}
	return out
}

func (inv *inventory) Changes() <-chan struct{} { return inv.changes }

// signal coalesces bursts: one pending notification is enough for the
// plugins to re-read everything.
func (inv *inventory) signal() {
	select {
	case inv.changes <- struct{}{}:
	default:
	}
	inv.subMu.Lock()
	for _, c := range inv.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	inv.subMu.Unlock()
}

// subscribe adds a reader that is signalled like the plugins.
func (inv *inventory) subscribe() <-chan struct{} {
	c := make(chan struct{}, 1)
	inv.subMu.Lock()
	inv.subs = append(inv.subs, c)
	inv.subMu.Unlock()
	return c
}
