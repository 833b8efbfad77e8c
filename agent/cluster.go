package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/demand"
	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/partitioner/geometry"
)

// clusterRESTConfig says how to reach the API server: the kubeconfig when
// one is given, the pod's service account when the agent runs in a pod
// (KUBERNETES_SERVICE_HOST is set), otherwise nil: no cluster, and the
// cluster demand source stays off.
func (a *Agent) clusterRESTConfig() (*rest.Config, error) {
	switch {
	case a.cfg.Kubeconfig != "":
		cfg, err := clientcmd.BuildConfigFromFlags("", a.cfg.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("cluster demand: kubeconfig %s: %w", a.cfg.Kubeconfig, err)
		}
		return cfg, nil
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("cluster demand: in-cluster config: %w", err)
		}
		return cfg, nil
	}
	return nil, nil
}

// clusterDemand builds the cluster demand source, or returns nil when it is
// off: no API server configured, no node name, or no device plugins (an
// instance made for a pod would never be advertised).
func (a *Agent) clusterDemand() (*demand.Source, error) {
	rc, err := a.clusterRESTConfig()
	if err != nil || rc == nil {
		return nil, err
	}
	log := a.log.WithField("component", "cluster-demand")
	switch {
	case a.cfg.NodeName == "":
		log.Warn("an API server is configured but no node name: cluster demand is off")
		return nil, nil
	case a.cfg.PluginDir == "":
		log.Warn("device plugins are off, so instances made for pods could not be advertised: cluster demand is off")
		return nil, nil
	}
	rc.UserAgent = "migpro-agent/" + a.cfg.NodeName
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("cluster demand: API client: %w", err)
	}
	a.startReadmit(cs)
	resources := map[corev1.ResourceName]string{}
	for _, p := range a.part.Profiles() {
		resources[corev1.ResourceName(defaults.ResourceName(a.cfg.Domain, p))] = p
	}
	src, err := demand.New(demand.Config{Client: cs, NodeName: a.cfg.NodeName, Domain: a.cfg.Domain,
		Resources: resources, Provisioner: newClusterProvisioner(a), Logger: a.log, Resync: a.cfg.TrackEvery, Events: true})
	if err != nil {
		return nil, fmt.Errorf("cluster demand: %w", err)
	}
	log.WithFields(logrus.Fields{"node": a.cfg.NodeName, "server": rc.Host}).Info("cluster demand on")
	return src, nil
}

// clusterProvisioner is the partitioner as the demand source sees it.
type clusterProvisioner struct {
	a *Agent

	mu   sync.Mutex
	geos map[string]modelGeometry // by GPU model
}

type modelGeometry struct {
	geo      *geometry.Geometry
	profiles map[string]gpu.Profile
}

func newClusterProvisioner(a *Agent) *clusterProvisioner {
	return &clusterProvisioner{a: a, geos: map[string]modelGeometry{}}
}

var _ demand.Provisioner = (*clusterProvisioner)(nil)

// IdleCount counts the idle instances of profile the device plugin offers
// the kubelet: complete, healthy, with a CDI spec. An unhealthy idle
// instance covers no pod.
func (c *clusterProvisioner) IdleCount(profile string) int {
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
func (c *clusterProvisioner) CanFit(profile string, n int, keep demand.Reserved) bool {
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
func (c *clusterProvisioner) freeRoom(profile string, limit int) int {
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
func (c *clusterProvisioner) geometry(index int) (modelGeometry, bool) {
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
func (c *clusterProvisioner) spares(plan partitioner.Plan, keep demand.Reserved) bool {
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
func (c *clusterProvisioner) Provision(ctx context.Context, profile string, keep demand.Reserved) error {
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

func (c *clusterProvisioner) made(in partitioner.Instance, plan partitioner.Plan) {
	c.a.log.WithFields(logrus.Fields{"uuid": in.UUID, "profile": in.Profile, "gpu": in.GPU, "plan": plan.String()}).Info("instance made for cluster demand")
}
