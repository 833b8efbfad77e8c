package agent

import (
	"context"

	"github.com/sirupsen/logrus"
)

// ignorableXids are application errors that do not mean the hardware is
// unhealthy (graphics engine exceptions, MMU faults caused by the program,
// and similar), as NVIDIA's own device plugin treats them.
var ignorableXids = map[uint64]bool{13: true, 31: true, 43: true, 45: true, 68: true, 109: true}

// watchHealth marks instances unhealthy on Xid events: the instance the
// event names, or every instance of the GPU when it names none. The plugins
// then advertise them as unhealthy.
func (a *Agent) watchHealth(ctx context.Context) error {
	events, err := a.node.WatchXids(ctx)
	if err != nil {
		a.log.WithError(err).Warn("Xid events unavailable: health is not tracked")
		<-ctx.Done()
		return nil
	}
	for ev := range events {
		log := a.log.WithFields(logrus.Fields{"gpu": ev.GPU, "gi": ev.GIID, "xid": ev.Xid})
		if ignorableXids[ev.Xid] {
			log.Info("ignoring application Xid")
			continue
		}
		key := gpuKey(ev.GPU)
		if ev.GIID >= 0 {
			for _, in := range a.part.Instances() {
				if in.GPU == ev.GPU && in.GIID == ev.GIID {
					key = in.UUID
				}
			}
		}
		a.mu.Lock()
		a.unhealthy[key] = true
		a.mu.Unlock()
		log.WithField("marked", key).Warn("Xid: marked unhealthy")
		a.inv.signal()
	}
	return nil
}
