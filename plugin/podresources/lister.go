package podresources

import (
	"context"

	"github.com/migpro/migpro/defaults"
)

// DefaultSocket is the kubelet's PodResources socket.
const DefaultSocket = defaults.PodResourcesSocket

// PodRef names the container a device is assigned to.
type PodRef struct {
	Namespace string
	Name      string
	Container string
	// Resource is the extended resource the device was assigned as, e.g.
	// "nvidia.com/mig-1g.10gb".
	Resource string
}

func (p PodRef) String() string { return p.Namespace + "/" + p.Name + "/" + p.Container }

// Lister tells which devices the kubelet has assigned, by device ID (for
// migpro, the MIG UUID).
type Lister interface {
	AssignedDevices(ctx context.Context) (map[string]PodRef, error)
}
