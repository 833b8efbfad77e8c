package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/partitioner"
)

// recover rebuilds the agent's state after a start or restart from three
// sources, none of which it disturbs:
//   - NVML says what exists (the partitioner adopted it as idle, and rolled
//     back half-made instances);
//   - the checkpoint says who held what;
//   - the kubelet's PodResources says which devices pods hold now.
//
// Every existing instance gets its spec (re)written, specs without an
// instance are removed, and instances nobody claims stay idle: they are
// destroyed only when their space is needed and the partitioner has proved
// them unused (no process, not assigned by the kubelet).
func (a *Agent) recover(ctx context.Context) error {
	insts := a.part.Instances()
	exists := map[string]partitioner.Instance{}
	now := time.Now()
	for _, in := range insts {
		exists[in.UUID] = in
		if err := a.writeSpec(in); err != nil {
			return err
		}
		a.idleSince[in.UUID] = now
	}
	files, err := a.cdi.List()
	if err != nil {
		a.log.WithError(err).Warn("some CDI specs could not be read")
	}
	for _, f := range files {
		if _, ok := exists[f.UUID]; !ok {
			a.log.WithField("uuid", f.UUID).Info("removing CDI spec of an instance that no longer exists")
			if err := a.cdi.Remove(f.UUID); err != nil {
				return err
			}
		}
	}
	cp, err := a.ckpt.Load()
	if errors.Is(err, errCorruptCheckpoint) {
		aside, aerr := a.ckpt.SetAside()
		if aerr != nil {
			return fmt.Errorf("%w; %w", err, aerr)
		}
		a.log.WithFields(logrus.Fields{"moved_to": aside}).Errorf("%v; set aside, recovering holders from NVML and the kubelet's PodResources (local holders are lost; their instances stay idle until proved unused)", err)
		err = nil
	}
	if err != nil {
		return err
	}
	for uuid, h := range cp.Holders {
		if _, ok := exists[uuid]; !ok {
			a.log.WithFields(logrus.Fields{"uuid": uuid, "owner": h.Owner}).Warn("checkpointed instance is gone from the GPU; forgetting it")
			continue
		}
		// The run keeps its age: a reservation drains the oldest runs.
		if _, err := a.part.AssignSince(uuid, h.Owner, h.Since); err != nil {
			return err
		}
		a.holders[uuid] = h
		a.ckpt.setLease(uuid, h.Lease)
	}
	if a.pods != nil {
		assigned, err := a.assigned(ctx)
		if err != nil {
			a.log.WithError(err).Warn("kubelet PodResources unavailable at start; relying on the checkpoint")
		}
		for uuid, pod := range assigned {
			in, ok := exists[uuid]
			if !ok {
				continue
			}
			a.podOf[uuid] = pod
			if _, held := a.holders[uuid]; !held {
				if _, err := a.part.Assign(in.UUID, ownerKubelet); err != nil {
					return err
				}
			}
		}
	}
	a.log.WithFields(logrus.Fields{"instances": len(insts), "held": len(a.holders)}).Info("state recovered")
	return a.persist()
}
