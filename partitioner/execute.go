package partitioner

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/gpu"
)

// execute applies a plan's steps on one GPU. The caller holds s.nvml, and
// keeps holding it until its records reflect the result: the driver reuses
// GPU-instance ids, so another plan on this GPU must not create an instance
// with a destroyed victim's id before the victim's record is gone. It
// returns the created instance and the GIIDs it destroyed. Destroys come
// first and only touch idle instances proven unused; if anything fails after
// the create, the created instance is destroyed again, so a failed plan
// leaves nothing half-made behind.
func (p *Partitioner) execute(ctx context.Context, s *slot, plan Plan, victims map[int]Instance) (gpu.Instance, []int, error) {
	p.mu.Lock()
	p.repairHalfMade(s)
	p.mu.Unlock()
	var destroyed []int
	for _, st := range plan.Steps {
		if err := ctx.Err(); err != nil {
			return gpu.Instance{}, destroyed, fmt.Errorf("%s: %w", st, err)
		}
		switch st.Kind {
		case StepDestroy:
			v := victims[st.GIID]
			if err := p.checkUnused(ctx, s, v); err != nil {
				return gpu.Instance{}, destroyed, fmt.Errorf("%s: %w", st, err)
			}
			if err := p.destroyOnGPU(s, v); err != nil {
				return gpu.Instance{}, destroyed, fmt.Errorf("%s: %w", st, err)
			}
			destroyed = append(destroyed, st.GIID)
		case StepCreate:
			inst, err := p.createOnGPU(s, st)
			return inst, destroyed, err
		}
	}
	return gpu.Instance{}, destroyed, nil
}

func (p *Partitioner) createOnGPU(s *slot, st Step) (gpu.Instance, error) {
	pr := s.profiles[st.Profile]
	giID, err := s.dev.CreateGPUInstance(pr.ID, st.Placement)
	if err != nil {
		return gpu.Instance{}, fmt.Errorf("%s: %w", st, err)
	}
	inst, err := s.dev.CreateComputeInstance(giID)
	if err != nil {
		// Roll back the half-made GPU instance.
		if rbErr := s.dev.DestroyGPUInstance(giID); rbErr != nil {
			return gpu.Instance{}, fmt.Errorf("%s: compute instance: %w (and rolling back GPU instance %d: %w)", st, err, giID, rbErr)
		}
		return gpu.Instance{}, fmt.Errorf("%s: compute instance: %w", st, err)
	}
	if p.hooks.AfterCreate != nil {
		rec := Instance{Instance: inst, Profile: st.Profile, State: Creating}
		if err := p.hooks.AfterCreate(rec); err != nil {
			if rbErr := p.destroyOnGPU(s, rec); rbErr != nil {
				return gpu.Instance{}, fmt.Errorf("%s: after create: %w (and rolling back: %w)", st, err, rbErr)
			}
			return gpu.Instance{}, fmt.Errorf("%s: after create: %w", st, err)
		}
	}
	p.log.WithFields(logrus.Fields{"gpu": inst.GPU, "gi": inst.GIID, "profile": st.Profile, "slot": st.Placement.Start, "uuid": inst.UUID}).Info("created MIG instance")
	return inst, nil
}

// destroyOnGPU destroys the compute instance, then the GPU instance, as the
// driver requires.
func (p *Partitioner) destroyOnGPU(s *slot, inst Instance) error {
	if inst.CIID != gpu.NoComputeInstance {
		if err := s.dev.DestroyComputeInstance(inst.GIID); err != nil && !errors.Is(err, gpu.ErrNotFound) {
			return fmt.Errorf("destroy compute instance: %w", err)
		}
	}
	if err := s.dev.DestroyGPUInstance(inst.GIID); err != nil {
		return fmt.Errorf("destroy GPU instance: %w", err)
	}
	if p.hooks.AfterDestroy != nil {
		p.hooks.AfterDestroy(inst)
	}
	p.log.WithFields(logrus.Fields{"gpu": inst.GPU, "gi": inst.GIID, "profile": inst.Profile, "uuid": inst.UUID}).Info("destroyed MIG instance")
	return nil
}

// checkUnused proves an instance idle before it is destroyed: no process on
// it, and nobody outside the partitioner (e.g. the kubelet) holding it.
func (p *Partitioner) checkUnused(ctx context.Context, s *slot, inst Instance) error {
	if inst.State != Destroying {
		return fmt.Errorf("%s: %w", inst, ErrInstanceInUse)
	}
	if inst.Complete() {
		procs, err := s.dev.InstanceProcesses(inst.GIID)
		if err != nil {
			return fmt.Errorf("list processes: %w", err)
		}
		if len(procs) > 0 {
			return fmt.Errorf("%d processes running: %w", len(procs), ErrInstanceInUse)
		}
	}
	if p.busy != nil {
		busy, err := p.busy(ctx, inst)
		if err != nil {
			return fmt.Errorf("check use: %w", err)
		}
		if busy {
			return fmt.Errorf("assigned outside migpro's records: %w", ErrInstanceInUse)
		}
	}
	return nil
}

// resync rebuilds a slot's records from what NVML holds, keeping the state
// and owner of instances it already knew. It runs after a failed plan so the
// records never disagree with the GPU. The caller holds p.mu and s.nvml.
func (p *Partitioner) resync(s *slot) {
	insts, err := s.dev.Instances()
	if err != nil {
		p.log.WithError(err).WithField("gpu", s.dev.Index()).Error("resync after failure: list instances")
		return
	}
	old := s.records
	s.records = map[int]*Instance{}
	for key, r := range old {
		if key < 0 { // a pending create of another plan: keep it reserved
			s.records[key] = r
		}
	}
	for _, in := range insts {
		rec := &Instance{Instance: in, Profile: s.profileName(in.ProfileID), State: Idle}
		if prev, ok := old[in.GIID]; ok && (prev.State == InUse || prev.State == Destroying) {
			// In-use stays in use; victims of another plan waiting for this
			// GPU stay reserved for it.
			rec.State, rec.Owner = prev.State, prev.Owner
		}
		s.records[in.GIID] = rec
	}
	p.repairHalfMade(s)
}

// repairHalfMade destroys GPU instances left without a compute instance by a
// failed create or destroy, so no half-made instance outlives the next NVML
// work on its GPU. A failed repair leaves the record for the next attempt.
// The caller holds s.nvml and p.mu.
func (p *Partitioner) repairHalfMade(s *slot) {
	for key, r := range s.records {
		if key < 0 || r.Complete() || r.State != Idle {
			continue
		}
		if err := s.dev.DestroyGPUInstance(r.GIID); err != nil {
			p.log.WithError(err).WithFields(logrus.Fields{"gpu": r.GPU, "gi": r.GIID}).Warn("roll back half-made GPU instance")
			continue
		}
		delete(s.records, key)
	}
}

// Repair rolls back every half-made instance on the node now.
func (p *Partitioner) Repair() {
	for _, s := range p.slots {
		s.nvml.Lock()
		p.mu.Lock()
		p.repairHalfMade(s)
		p.mu.Unlock()
		s.nvml.Unlock()
	}
	p.changed()
}
