package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/partitioner/geometry"
)

// ClusterProvisioner is the partitioner as the cluster demand source sees
// it (package demand's Provisioner; agent/kube wires the two). A reserved
// count is a map from profile to the idle instances already spoken for.
type ClusterProvisioner struct {
	a *Agent

	mu   sync.Mutex
	geos map[string]modelGeometry // by GPU model
}

type modelGeometry struct {
	geo      *geometry.Geometry
	profiles map[string]gpu.Profile
}

// ClusterProvisioner returns the agent's partitioner as cluster demand
// provisions through it.
func (a *Agent) ClusterProvisioner() *ClusterProvisioner {
	return &ClusterProvisioner{a: a, geos: map[string]modelGeometry{}}
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
	free := c.freeRoom(profile, need)
	if free >= need {
		return true
	}
	if free > 0 || need > 1 || idle > 0 {
		return false // Plan speaks for one instance, and Provision reclaims only then
	}
	plan, err := c.a.part.Plan(profile)
	return err == nil && plan.Reuse == nil && c.spares(plan, keep)
}

// freeRoom counts how many more instances of profile fit in free space, up
// to limit, placing them one by one on every GPU. Instances of one profile
// never overlap one another's placements, so placing greedily finds them
// all. A GPU whose instances cannot be laid out in the geometry counts as
// full.
func (c *ClusterProvisioner) freeRoom(profile string, limit int) int {
	byGPU := map[int][]partitioner.Instance{}
	for _, in := range c.a.part.Instances() {
		byGPU[in.GPU] = append(byGPU[in.GPU], in)
	}
	total := 0
	for _, g := range c.a.part.GPUs() {
		mg, ok := c.geometry(g.Index)
		pr, offered := mg.profiles[profile]
		if !ok || !offered {
			continue
		}
		st, count, full := mg.geo.Empty(), 0, false
		for _, in := range byGPU[g.Index] {
			var err error
			if st, err = mg.geo.Place(st, in.Profile, in.Placement.Start); err != nil {
				full = true
				break
			}
			if in.Profile == profile {
				count++
			}
		}
		for !full && total < limit && count < pr.MaxCount {
			cands := mg.geo.Candidates(st, profile)
			if len(cands) == 0 {
				break
			}
			st = mg.geo.Add(st, cands[0].Index)
			count++
			total++
		}
	}
	return total
}

// geometry returns a GPU's MIG geometry, built once per model.
func (c *ClusterProvisioner) geometry(index int) (modelGeometry, bool) {
	dev, ok := c.a.part.Device(index)
	if !ok {
		return modelGeometry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if mg, ok := c.geos[dev.Model()]; ok {
		return mg, true
	}
	profiles, err := dev.Profiles()
	if err != nil {
		c.a.log.WithError(err).WithField("gpu", index).Warn("cluster demand: read MIG profiles")
		return modelGeometry{}, false
	}
	geo, err := geometry.New(profiles, geometry.Config{})
	if err != nil {
		c.a.log.WithError(err).WithField("gpu", index).Warn("cluster demand: MIG geometry")
		return modelGeometry{}, false
	}
	mg := modelGeometry{geo: geo, profiles: map[string]gpu.Profile{}}
	for _, p := range profiles {
		mg.profiles[p.Name] = p
	}
	c.geos[dev.Model()] = mg
	return mg, true
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
