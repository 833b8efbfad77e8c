package nvmlgpu

import (
	"context"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu"
)

// unattributed is the id NVML puts in an event's GI/CI fields when the
// event concerns the whole GPU.
const unattributed = 0xFFFFFFFF

// WatchXids registers every GPU for critical Xid events and delivers them
// until ctx ends, then closes the channel. GPUs that cannot report Xids
// (NOT_SUPPORTED) are skipped with a warning rather than failing the watch,
// because health of the others still matters.
func (n *Node) WatchXids(ctx context.Context) (<-chan gpu.XidEvent, error) {
	set, ret := n.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return nil, driverError("create NVML event set", ret)
	}
	byUUID := map[string]int{}
	registered := 0
	for _, d := range n.devices {
		byUUID[d.uuid] = d.index
		ret := d.handle.RegisterEvents(nvml.EventTypeXidCriticalError, set)
		if ret == nvml.ERROR_NOT_SUPPORTED {
			n.log.WithField("gpu", d.index).Warn("GPU cannot report Xid events; its instances will not be marked unhealthy")
			continue
		}
		if ret != nvml.SUCCESS {
			set.Free()
			return nil, driverError(fmt.Sprintf("register Xid events on GPU %d", d.index), ret)
		}
		registered++
	}
	if registered == 0 && len(n.devices) > 0 {
		n.log.Warn("no GPU can report Xid events; instance health will not be tracked")
	}
	out := make(chan gpu.XidEvent, 64)
	go n.pumpXids(ctx, set, byUUID, out)
	return out, nil
}

func (n *Node) pumpXids(ctx context.Context, set nvml.EventSet, byUUID map[string]int, out chan<- gpu.XidEvent) {
	defer close(out)
	defer set.Free()
	// A zero wait would make the loop spin on a quiet GPU.
	waitMs := max(uint32(n.eventWait/time.Millisecond), 1)
	for ctx.Err() == nil {
		data, ret := set.Wait(waitMs)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_TIMEOUT:
			continue
		default:
			// A broken event set will not heal; back off so a persistent
			// error does not spin, and keep watching for as long as asked.
			n.log.WithField("code", CodeName(ret)).Warn("waiting for Xid events failed")
			select {
			case <-ctx.Done():
			case <-time.After(n.eventWait):
			}
			continue
		}
		if data.EventType&nvml.EventTypeXidCriticalError == 0 {
			continue
		}
		ev := gpu.XidEvent{GPU: -1, GIID: -1, CIID: -1, Xid: data.EventData, At: time.Now()}
		if data.Device != nil {
			if uuid, ret := data.Device.GetUUID(); ret == nvml.SUCCESS {
				if i, ok := byUUID[uuid]; ok {
					ev.GPU = i
				}
			}
		}
		if data.GpuInstanceId != unattributed {
			ev.GIID = int(data.GpuInstanceId)
		}
		if data.ComputeInstanceId != unattributed {
			ev.CIID = int(data.ComputeInstanceId)
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		}
	}
}
