package partitioner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/migpro/migpro/gpu"
)

// Allocate meets a request for a profile and hands the instance to owner. An
// empty owner provisions an idle instance (for a warm pool, or for the
// kubelet to assign). It returns the instance and the plan that made it.
func (p *Partitioner) Allocate(ctx context.Context, profile, owner string) (Instance, Plan, error) {
	return p.AllocateAt(ctx, profile, nil, owner)
}

// AllocateAt is Allocate restricted to one GPU and slot when pin is set.
func (p *Partitioner) AllocateAt(ctx context.Context, profile string, pin *Pin, owner string) (Instance, Plan, error) {
	return p.allocate(ctx, profile, owner, func() (Plan, error) { return p.decidePinned(profile, pin) })
}

// Provision creates one more idle instance of a profile in free space, for a
// warm pool: it neither reuses an idle instance nor destroys any. It returns
// ErrMustWait when there is no free room.
func (p *Partitioner) Provision(ctx context.Context, profile string) (Instance, Plan, error) {
	return p.allocate(ctx, profile, "", func() (Plan, error) {
		if plan, ok := p.decideStage(profile, nil, p.createStage(false)); ok {
			return plan, nil
		}
		return Plan{}, fmt.Errorf("%s: %w", profile, ErrMustWait)
	})
}

// allocate runs a decision under the lock and executes it.
func (p *Partitioner) allocate(ctx context.Context, profile, owner string, decide func() (Plan, error)) (Instance, Plan, error) {
	if !slices.Contains(p.profiles, profile) {
		return Instance{}, Plan{}, fmt.Errorf("%s: %w (offered: %v)", profile, ErrUnknownProfile, p.profiles)
	}
	p.mu.Lock()
	plan, err := decide()
	if err != nil {
		p.mu.Unlock()
		return Instance{}, plan, err
	}
	p.mix.observe(profile, p.now())
	if plan.Reuse != nil {
		if owner != "" {
			p.markInUse(plan.Reuse, owner, p.now())
		}
		inst := *plan.Reuse
		p.mu.Unlock()
		p.changed()
		return inst, plan, nil
	}
	s := p.slotOf(plan.GPU)
	// Reserve: victims become Destroying and the new placement is held by a
	// pending record, so concurrent decisions leave both alone.
	victims := map[int]Instance{}
	for _, st := range plan.Steps {
		if st.Kind == StepDestroy {
			r := s.records[st.GIID]
			r.State = Destroying
			victims[st.GIID] = *r
		}
	}
	create := plan.Steps[len(plan.Steps)-1]
	tempKey := s.nextTemp
	s.nextTemp--
	s.records[tempKey] = &Instance{
		Instance: gpu.Instance{GPU: plan.GPU, GIID: tempKey, CIID: gpu.NoComputeInstance, ProfileID: s.profiles[create.Profile].ID, Placement: create.Placement},
		Profile:  create.Profile, State: Creating,
	}
	p.mu.Unlock()

	s.nvml.Lock()
	made, destroyed, err := p.execute(ctx, s, plan, victims)
	p.mu.Lock()
	delete(s.records, tempKey)
	for _, gi := range destroyed {
		delete(s.records, gi)
	}
	var inst Instance
	if err != nil {
		for gi := range victims {
			if r, ok := s.records[gi]; ok {
				r.State = Idle
			}
		}
		p.resync(s)
	} else {
		rec := &Instance{Instance: made, Profile: create.Profile, State: Idle}
		if owner != "" {
			p.markInUse(rec, owner, p.now())
		}
		s.records[made.GIID] = rec
		inst = *rec
	}
	p.mu.Unlock()
	s.nvml.Unlock()
	p.changed()
	if err != nil {
		return Instance{}, plan, fmt.Errorf("allocate %s: %w", profile, err)
	}
	return inst, plan, nil
}

// Assign marks an idle instance as in use by owner (e.g. the kubelet gave it
// to a pod).
func (p *Partitioner) Assign(uuid, owner string) (Instance, error) {
	return p.AssignSince(uuid, owner, time.Time{})
}

// AssignSince is Assign for a holding that began at since, on the
// partitioner's clock: the agent hands instances back to the holders its
// checkpoint names after a restart, and ReserveFor ranks runs by how long
// they have held. The zero time, or a time after now, counts from now.
func (p *Partitioner) AssignSince(uuid, owner string, since time.Time) (Instance, error) {
	p.mu.Lock()
	r, err := p.find(uuid)
	if err == nil {
		switch r.State {
		case Idle:
			at := p.now()
			if !since.IsZero() && since.Before(at) {
				at = since
			}
			p.markInUse(r, owner, at)
		case InUse:
			if r.Owner != owner {
				err = fmt.Errorf("assign %s to %s: held by %s: %w", uuid, owner, r.Owner, ErrInstanceInUse)
			}
		default:
			err = fmt.Errorf("assign %s: instance is %s", uuid, r.State)
		}
	}
	var out Instance
	if r != nil {
		out = *r
	}
	p.mu.Unlock()
	if err == nil {
		p.changed()
	}
	return out, err
}

// markInUse hands the record r to owner, noting that the holding began at
// at, for ReserveFor. The caller holds p.mu.
func (p *Partitioner) markInUse(r *Instance, owner string, at time.Time) {
	r.State, r.Owner = InUse, owner
	p.slotOf(r.GPU).inUseSince[r.GIID] = at
}

// Release returns an in-use instance to idle. Releasing an idle instance is a
// no-op, so a repeated release is harmless.
func (p *Partitioner) Release(uuid string) (Instance, error) {
	p.mu.Lock()
	r, err := p.find(uuid)
	var out Instance
	if err == nil {
		if r.State == InUse {
			r.State, r.Owner = Idle, ""
			delete(p.slotOf(r.GPU).inUseSince, r.GIID)
		}
		out = *r
	}
	p.mu.Unlock()
	if err == nil {
		p.changed()
	}
	return out, err
}

// Destroy destroys an idle instance. In-use instances are refused.
func (p *Partitioner) Destroy(ctx context.Context, uuid string) error {
	p.mu.Lock()
	r, err := p.find(uuid)
	if err != nil {
		p.mu.Unlock()
		return err
	}
	if r.State != Idle {
		p.mu.Unlock()
		return fmt.Errorf("destroy %s: it is %s: %w", r, r.State, ErrInstanceInUse)
	}
	s := p.slotOf(r.GPU)
	r.State = Destroying
	victim := *r
	p.mu.Unlock()

	plan := Plan{Profile: r.Profile, GPU: r.GPU, Steps: []Step{{Kind: StepDestroy, GPU: r.GPU, Profile: r.Profile, Placement: r.Placement, GIID: r.GIID}}}
	s.nvml.Lock()
	_, destroyed, err := p.execute(ctx, s, plan, map[int]Instance{victim.GIID: victim})
	p.mu.Lock()
	if len(destroyed) == 1 {
		delete(s.records, victim.GIID)
	} else if rec, ok := s.records[victim.GIID]; ok {
		rec.State = Idle
		p.resync(s)
	}
	p.mu.Unlock()
	s.nvml.Unlock()
	p.changed()
	if err != nil {
		return fmt.Errorf("destroy %s: %w", uuid, err)
	}
	return nil
}

// Find returns the record of an instance by MIG UUID.
func (p *Partitioner) Find(uuid string) (Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, err := p.find(uuid)
	if err != nil {
		return Instance{}, err
	}
	return *r, nil
}

func (p *Partitioner) find(uuid string) (*Instance, error) {
	for _, s := range p.slots {
		for _, r := range s.records {
			if r.UUID == uuid && uuid != "" {
				return r, nil
			}
		}
	}
	return nil, fmt.Errorf("%s: %w", uuid, ErrUnknownInstance)
}

func (p *Partitioner) slotOf(gpuIndex int) *slot {
	for _, s := range p.slots {
		if s.dev.Index() == gpuIndex {
			return s
		}
	}
	panic(fmt.Sprintf("partitioner: no GPU %d", gpuIndex))
}

// Plan returns what Allocate would do for a profile now, without doing it.
func (p *Partitioner) Plan(profile string) (Plan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.decide(profile)
}
