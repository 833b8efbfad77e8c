package agent

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/partitioner"
)

// maintain runs the periodic work: use tracking through the kubelet, the
// warm pool, and reaping instances idle for too long.
func (a *Agent) maintain(ctx context.Context) error {
	t := time.NewTicker(a.cfg.TrackEvery)
	defer t.Stop()
	for {
		a.Maintain(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Maintain runs one round of the periodic work now.
func (a *Agent) Maintain(ctx context.Context) {
	a.pushPending() // local callers gone quiet stop counting, and lose their reservation
	a.trackUse(ctx)
	a.fillWarmPool(ctx)
	a.reapIdle(ctx)
}

// trackUse follows the kubelet: an instance it allocated goes back to idle
// when no pod holds it any more (after a grace period, because PodResources
// lists an allocation only once the container is admitted), and an instance
// a pod holds is marked in use even if the agent missed the Allocate.
func (a *Agent) trackUse(ctx context.Context) {
	if a.pods == nil {
		return
	}
	assigned, err := a.assigned(ctx)
	if err != nil {
		a.log.WithError(err).Warn("use tracking: kubelet PodResources unavailable")
		return
	}
	changed := false
	for _, in := range a.part.Instances() {
		pod, held := assigned[in.UUID]
		a.mu.Lock()
		if held {
			a.podOf[in.UUID] = pod
		} else {
			delete(a.podOf, in.UUID)
		}
		// An allocation not yet checkpointed (allocateCheck assigns, then
		// persists) has no holder yet: its grace has only begun.
		holder, known := a.holders[in.UUID]
		a.mu.Unlock()
		switch {
		case held && in.State == partitioner.Idle:
			if _, err := a.part.Assign(in.UUID, ownerKubelet); err == nil {
				changed = true
			}
		case !held && in.State == partitioner.InUse && in.Owner == ownerKubelet && known && time.Since(holder.Since) > a.cfg.AssignGrace:
			if _, err := a.part.Release(in.UUID); err == nil {
				a.markIdle(in.UUID)
				changed = true
				a.log.WithFields(logrus.Fields{"uuid": in.UUID, "profile": in.Profile}).Info("pod gone: instance back to idle")
			}
		}
	}
	if changed {
		if err := a.persist(); err != nil {
			a.log.WithError(err).Error("checkpoint after use tracking")
		}
	}
}

func (a *Agent) markIdle(uuid string) {
	a.mu.Lock()
	a.idleSince[uuid] = time.Now()
	a.mu.Unlock()
}

// idleCount counts complete idle instances of a profile.
func (a *Agent) idleCount(profile string) int {
	n := 0
	for _, in := range a.part.Instances() {
		if in.Profile == profile && in.State == partitioner.Idle && in.Complete() {
			n++
		}
	}
	return n
}

// fillWarmPool creates idle instances up to the configured counts, but only
// in free space: a warm pool never destroys other idle instances.
func (a *Agent) fillWarmPool(ctx context.Context) {
	for profile, want := range a.cfg.WarmPool {
		for have := a.idleCount(profile); have < want; have++ {
			if _, _, err := a.part.Provision(ctx, profile); err != nil {
				if !errors.Is(err, partitioner.ErrMustWait) {
					a.log.WithError(err).WithField("profile", profile).Warn("warm pool")
				}
				break
			}
		}
	}
}

// reapIdle destroys instances idle for longer than the idle timeout, except
// those the warm pool keeps.
func (a *Agent) reapIdle(ctx context.Context) {
	if a.cfg.IdleTimeout <= 0 {
		return
	}
	insts := a.part.Instances()
	// Idle counts come from the same snapshot, kept current as instances
	// go, rather than a fresh Instances() per candidate.
	idle := map[string]int{}
	for _, in := range insts {
		if in.State == partitioner.Idle && in.Complete() {
			idle[in.Profile]++
		}
	}
	for _, in := range insts {
		if in.State != partitioner.Idle || !in.Complete() {
			continue
		}
		a.mu.Lock()
		since, ok := a.idleSince[in.UUID]
		a.mu.Unlock()
		if !ok || time.Since(since) < a.cfg.IdleTimeout || idle[in.Profile] <= a.cfg.WarmPool[in.Profile] {
			continue
		}
		if err := a.part.Destroy(ctx, in.UUID); err != nil {
			a.log.WithError(err).WithField("uuid", in.UUID).Warn("reap idle instance")
			continue
		}
		idle[in.Profile]--
	}
}
