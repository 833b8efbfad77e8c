package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/partitioner"
)

// PrepareAt gives owner an instance of profile at exactly one GPU and slot:
// the one it already holds (a repeated Prepare), an idle one there, or a new
// one made there (destroying idle instances in the way). The holder is
// checkpointed before it returns. It returns the instance and its qualified
// CDI name.
func (a *Agent) PrepareAt(ctx context.Context, profile string, pin partitioner.Pin, owner string) (partitioner.Instance, string, error) {
	for _, in := range a.part.Instances() {
		if in.Owner != owner {
			continue
		}
		if in.Profile != profile || in.GPU != pin.GPU || in.Placement.Start != pin.Start {
			return partitioner.Instance{}, "", fmt.Errorf("prepare %s: %s already holds %s", owner, owner, in)
		}
		name, _ := a.cdiName(in.UUID)
		return in, name, nil
	}
	in, plan, err := a.part.AllocateAt(ctx, profile, &pin, owner)
	if err != nil {
		return partitioner.Instance{}, "", fmt.Errorf("prepare %s on GPU %d at slot %d: %w", profile, pin.GPU, pin.Start, err)
	}
	if err := a.persist(); err != nil {
		a.part.Release(in.UUID)
		return partitioner.Instance{}, "", fmt.Errorf("prepare %s: %w", profile, err)
	}
	name, _ := a.cdiName(in.UUID)
	a.log.WithFields(logrus.Fields{"uuid": in.UUID, "profile": profile, "gpu": in.GPU, "start": in.Placement.Start, "owner": owner, "plan": plan.String()}).Info("prepared for a claim")
	return in, name, nil
}

// ReleaseOwners returns every instance whose holder starts with prefix to
// the idle pool (the warm-pool and idle-timeout rules then decide whether
// it is destroyed), checkpoints, and returns the instances released. No
// instance held: nothing to do, not an error.
func (a *Agent) ReleaseOwners(prefix string) ([]partitioner.Instance, error) {
	var out []partitioner.Instance
	for _, in := range a.part.Instances() {
		if in.State != partitioner.InUse || !strings.HasPrefix(in.Owner, prefix) {
			continue
		}
		if _, err := a.part.Release(in.UUID); err != nil {
			return out, fmt.Errorf("release %s: %w", in.UUID, err)
		}
		a.markIdle(in.UUID)
		out = append(out, in)
	}
	if len(out) == 0 {
		return nil, nil
	}
	if err := a.persist(); err != nil {
		return out, fmt.Errorf("release %s: %w", prefix, err)
	}
	for _, in := range out {
		a.log.WithFields(logrus.Fields{"uuid": in.UUID, "profile": in.Profile, "owner": in.Owner}).Info("claim unprepared: instance back to idle")
	}
	return out, nil
}

// Healthy reports whether no Xid has marked the instance or its GPU.
func (a *Agent) Healthy(in partitioner.Instance) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.healthyLocked(in)
}

// GPUHealthy reports whether no unattributed Xid has marked a whole GPU.
func (a *Agent) GPUHealthy(index int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.unhealthy[gpuKey(index)]
}

// Subscribe returns a channel that is signalled (coalesced, never blocking
// the agent) whenever instances or their health may have changed.
func (a *Agent) Subscribe() <-chan struct{} { return a.inv.subscribe() }
