package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/partitioner"
)

// ClusterProvisioner is the partitioner as the cluster demand source sees
// it (package demand's Provisioner; agent/kube wires the two). A reserved
// count is a map from profile to the idle instances already spoken for.
type ClusterProvisioner struct {
	a *Agent
}

// ClusterProvisioner returns the agent's partitioner as cluster demand
// provisions through it.
func (a *Agent) ClusterProvisioner() *ClusterProvisioner {
	return &ClusterProvisioner{a: a}
}

// IdleCount counts the idle instances of profile the device plugin offers
// the kubelet: complete, healthy, with a CDI spec. An unhealthy idle
// instance covers no pod.
func (c *ClusterProvisioner) IdleCount(profile string) int {
	insts := c.a.part.Instances()
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, in := range insts {
		if in.Profile != profile || in.State != partitioner.Idle || !in.Complete() || !a.healthyLocked(in) {
			continue
		}
		if _, ok := a.cdiNames[in.UUID]; ok {
			n++
		}
	}
	return n
}

// CanFit counts, without side effects, what n more instances of profile
// could come from: idle ones beyond those keep reserves, then new ones in
// free space (the partitioner's geometry, on the instances as they are now),
// or, for a single one when there is neither free space nor any idle
// instance of the profile, the partitioner's own decision (Plan) if it
// destroys only unreserved idle instances. These are the ways Provision can
// make them.
func (c *ClusterProvisioner) CanFit(profile string, n int, keep map[string]int) bool {
	idle := c.a.idleCount(profile) // what Allocate would reuse, healthy or not
	need := n - max(c.IdleCount(profile)-keep[profile], 0)
	if need <= 0 {
		return true
	}
	free := c.a.part.FreeRoom(profile, need)
	if free >= need {
		return true
	}
	if free > 0 || need > 1 || idle > 0 {
		return false // Plan speaks for one instance, and Provision reclaims only then
	}
	plan, err := c.a.part.Plan(profile)
	return err == nil && plan.Reuse == nil && c.spares(plan, keep)
}

// spares reports whether a plan destroys only idle instances beyond those
// keep reserves.
func (c *ClusterProvisioner) spares(plan partitioner.Plan, keep map[string]int) bool {
	victims := map[string]int{}
	for _, st := range plan.Steps {
		if st.Kind == partitioner.StepDestroy {
			victims[st.Profile]++
		}
	}
	for prof, n := range victims {
		if c.IdleCount(prof)-n < keep[prof] {
			return false
		}
	}
	return true
}

// Provision makes one more idle instance: in free space if there is some,
// else, as the partitioner's policy chooses, in the space of idle instances
// nobody reserved.
func (c *ClusterProvisioner) Provision(ctx context.Context, profile string, keep map[string]int) (err error) {
	defer func() {
		result := "served"
		switch {
		case errors.Is(err, partitioner.ErrMustWait):
			result = "waiting"
		case err != nil:
			result = "failed"
		}
		c.a.metrics.demand.WithLabelValues(profile, result).Inc()
	}()
	in, plan, err := c.a.part.Provision(ctx, profile)
	if err == nil {
		c.made(in, plan)
		return nil
	}
	if !errors.Is(err, partitioner.ErrMustWait) {
		return fmt.Errorf("provision %s: %w", profile, err)
	}
	if c.a.idleCount(profile) > 0 {
		// Allocate would hand out that (reserved) idle instance, not make one.
		return fmt.Errorf("provision %s: no free space, and every idle %s is reserved: %w", profile, profile, partitioner.ErrMustWait)
	}
	if plan, err = c.a.part.Plan(profile); err != nil {
		return fmt.Errorf("provision %s: %w", profile, err)
	}
	if !c.spares(plan, keep) {
		return fmt.Errorf("provision %s: making room (%s) would destroy reserved idle instances: %w", profile, plan, partitioner.ErrMustWait)
	}
	// Plan and Allocate decide alike on the same state; something may change
	// in between, which at worst costs an idle instance another pod wanted.
	if in, plan, err = c.a.part.Allocate(ctx, profile, ""); err != nil {
		return fmt.Errorf("provision %s: %w", profile, err)
	}
	if plan.Reuse != nil {
		// An idle instance appeared meanwhile (say, a pod ended): the node
		// has one more, which is what was asked.
		return nil
	}
	c.made(in, plan)
	return nil
}

func (c *ClusterProvisioner) made(in partitioner.Instance, plan partitioner.Plan) {
	c.a.log.WithFields(logrus.Fields{"uuid": in.UUID, "profile": in.Profile, "gpu": in.GPU, "plan": plan.String()}).Info("instance made for cluster demand")
}
