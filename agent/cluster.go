package agent

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/migpro/migpro/demand"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/plugin"
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
	resources := map[corev1.ResourceName]string{}
	for _, p := range a.part.Profiles() {
		resources[corev1.ResourceName(plugin.ResourceName(a.cfg.Domain, p))] = p
	}
	src, err := demand.New(demand.Config{Client: cs, NodeName: a.cfg.NodeName, Domain: a.cfg.Domain,
		Resources: resources, Provisioner: clusterProvisioner{a}, Logger: a.log, Resync: a.cfg.TrackEvery, Events: true})
	if err != nil {
		return nil, fmt.Errorf("cluster demand: %w", err)
	}
	log.WithFields(logrus.Fields{"node": a.cfg.NodeName, "server": rc.Host}).Info("cluster demand on")
	return src, nil
}

// clusterProvisioner is the partitioner as the demand source sees it.
type clusterProvisioner struct{ a *Agent }

var _ demand.Provisioner = clusterProvisioner{}

func (c clusterProvisioner) IdleCount(profile string) int { return c.a.idleCount(profile) }

// CanFit asks the partitioner's decision (Plan, no side effects) whether one
// more instance can be had. Plan prefers reusing an idle instance; when
// every idle one of the profile is reserved that answer says nothing about
// making another, so it counts as no (the pod waits until the reserved ones
// are taken, or another node claims it).
func (c clusterProvisioner) CanFit(profile string, keep demand.Reserved) bool {
	plan, err := c.a.part.Plan(profile)
	if err != nil {
		return false
	}
	if plan.Reuse != nil {
		return c.a.idleCount(profile) > keep[profile]
	}
	return c.spares(plan, keep)
}

// spares reports whether a plan destroys only idle instances beyond those
// keep reserves.
func (c clusterProvisioner) spares(plan partitioner.Plan, keep demand.Reserved) bool {
	victims := map[string]int{}
	for _, st := range plan.Steps {
		if st.Kind == partitioner.StepDestroy {
			victims[st.Profile]++
		}
	}
	for prof, n := range victims {
		if c.a.idleCount(prof)-n < keep[prof] {
			return false
		}
	}
	return true
}

// Provision makes one more idle instance: in free space if there is some,
// else, as the partitioner's policy chooses, in the space of idle instances
// nobody reserved.
func (c clusterProvisioner) Provision(ctx context.Context, profile string, keep demand.Reserved) error {
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

func (c clusterProvisioner) made(in partitioner.Instance, plan partitioner.Plan) {
	c.a.log.WithFields(logrus.Fields{"uuid": in.UUID, "profile": in.Profile, "gpu": in.GPU, "plan": plan.String()}).Info("instance made for cluster demand")
}
