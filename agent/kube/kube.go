package kube

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	typedbatchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/demand"
	"github.com/migpro/migpro/nodeview"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/readmit"
	"github.com/migpro/migpro/telemetry"
)

var _ demand.Provisioner = (*agent.ClusterProvisioner)(nil)

// Client is what the link needs of a Kubernetes clientset: the core API
// group (pods, events, evictions, nodes) and the controllers readmission
// looks up (apps, batch). A kubernetes.Interface is one; the agent builds
// only these groups' clients, so the others stay out of its binary and its
// memory.
type Client = readmit.Client

type groupClients struct {
	core  typedcorev1.CoreV1Interface
	apps  typedappsv1.AppsV1Interface
	batch typedbatchv1.BatchV1Interface
}

func (c groupClients) CoreV1() typedcorev1.CoreV1Interface    { return c.core }
func (c groupClients) AppsV1() typedappsv1.AppsV1Interface    { return c.apps }
func (c groupClients) BatchV1() typedbatchv1.BatchV1Interface { return c.batch }

func newGroupClients(rc *rest.Config) (Client, error) {
	var c groupClients
	var err error
	if c.core, err = typedcorev1.NewForConfig(rc); err != nil {
		return nil, err
	}
	if c.apps, err = typedappsv1.NewForConfig(rc); err != nil {
		return nil, err
	}
	if c.batch, err = typedbatchv1.NewForConfig(rc); err != nil {
		return nil, err
	}
	return c, nil
}

// Option adjusts the link.
type Option func(*options)

type options struct {
	clientset Client
	runs      RunRecorder
	dra       bool
	view      nodeview.ClientConfig
}

// WithNodeView reads pods, ReplicaSets, Jobs and Namespaces through the
// node view at v.URL (package nodeview) instead of the API server, whose
// RBAC then grants the agent no read of them; writes still go to the API
// server.
func WithNodeView(v nodeview.ClientConfig) Option { return func(o *options) { o.view = v } }

// WithDRA says the agent also serves instances through its DRA driver: with
// the device plugins off, readmission stays on (a claim's pod is readmitted
// through its claim) while cluster demand, which advertises through the
// device plugins, is off.
func WithDRA() Option { return func(o *options) { o.dra = true } }

// WithClientset uses cs instead of a client built from the agent's
// kubeconfig or the pod's service account (for tests).
func WithClientset(cs Client) Option { return func(o *options) { o.clientset = cs } }

// New returns the agent's cluster link builder (agent.WithCluster).
func New(opts ...Option) agent.ClusterFunc {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return func(ctx context.Context, a *agent.Agent) (agent.Cluster, error) { return newLink(ctx, a, o) }
}

// link is cluster demand and readmission for one agent.
type link struct {
	a         *agent.Agent
	log       logrus.FieldLogger
	cs        Client
	node      string
	demand    *demand.Source
	marker    *readmit.Marker
	marks     chan predictor.Mark
	failOpens chan failOpen
	runs      RunRecorder
	ends      chan agent.End
	// reach is why the API server did not answer the last probe; nil
	// while it answers (reach.go).
	reach atomic.Pointer[error]
}

// markQueue bounds the marks waiting for readmission. A mark comes once per
// container, so a full queue means the API server is far behind.
const markQueue = 256

func newLink(ctx context.Context, a *agent.Agent, o options) (agent.Cluster, error) {
	cfg := a.Config()
	log := a.Logger().WithField("component", "cluster")
	cs := o.clientset
	host := "(given)"
	if cs == nil {
		rc, err := restConfig(cfg.Kubeconfig)
		if err != nil || rc == nil {
			return nil, err
		}
		rc.UserAgent = "migpro-agent/" + cfg.NodeName
		if cs, err = newGroupClients(rc); err != nil {
			return nil, fmt.Errorf("cluster: API client: %w", err)
		}
		host = rc.Host
		if o.view.URL != "" {
			vc, err := o.view.RESTConfig(rc.UserAgent)
			if err != nil {
				return nil, fmt.Errorf("cluster: %w", err)
			}
			reads, err := newGroupClients(vc)
			if err != nil {
				return nil, fmt.Errorf("cluster: node view client: %w", err)
			}
			cs = nodeview.ReadsThrough(cs, reads)
			host += ", reads through " + o.view.URL
		}
	}
	if cfg.NodeName == "" {
		log.Warn("an API server is configured but no node name: cluster demand and readmission are off")
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := (&link{a: a, log: log}).checkNode(ctx, cs); err != nil {
		return nil, err
	}
	var src *demand.Source
	switch {
	case cfg.PluginDir == "" && !o.dra:
		log.Warn("device plugins are off, so instances made for pods could not be advertised: cluster demand and readmission are off")
		return nil, nil
	case cfg.PluginDir == "":
		log.Info("device plugins are off: cluster demand is off; the DRA driver serves pods, and readmission stays on")
	default:
		resources := map[corev1.ResourceName]string{}
		for _, p := range a.Partitioner().Profiles() {
			resources[corev1.ResourceName(defaults.ResourceName(cfg.Domain, p))] = p
		}
		var err error
		src, err = demand.New(cs, cfg.NodeName, a.ClusterProvisioner(), demand.WithDomain(cfg.Domain),
			demand.WithResources(resources), demand.WithLogger(a.Logger()), demand.WithResync(cfg.TrackEvery), demand.WithEvents(true))
		if err != nil {
			return nil, fmt.Errorf("cluster demand: %w", err)
		}
	}
	mode, err := readmit.ParseMode(cfg.ReadmitMode)
	if err != nil {
		return nil, err
	}
	marker, err := readmit.NewMarker(cs, readmit.WithDomain(cfg.Domain), readmit.WithNodeName(cfg.NodeName),
		readmit.WithLogger(a.Logger().WithField("component", "readmit")),
		readmit.WithMode(mode), readmit.WithLabelOverride(cfg.ReadmitModeLabels))
	if err != nil {
		return nil, err
	}
	l := &link{a: a, log: log, cs: cs, node: cfg.NodeName, demand: src, marks: make(chan predictor.Mark, markQueue),
		failOpens: make(chan failOpen, markQueue), marker: marker,
		ends: make(chan agent.End, markQueue), runs: o.runs}
	if l.runs == nil {
		l.runs = l.marker
	}
	if reg := a.Registry(); reg != nil {
		for _, c := range l.marker.Collectors() {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("readmit metrics: %w", err)
			}
		}
	}
	restart := cfg.ReadmitRestart
	if restart <= 0 {
		restart = readmit.DefaultRestart
	}
	a.SetPredictorHints(func(ctx context.Context, reg telemetry.Registration) (predictor.Hints, bool) {
		return l.podHints(ctx, reg, restart)
	})
	a.OnMark(l.queue)
	a.OnFailOpen(l.queueFailOpen)
	a.OnContainerEnd(l.queueEnd)
	log.WithFields(logrus.Fields{"node": cfg.NodeName, "server": host, "readmit_mode": mode, "cluster_demand": src != nil}).Info("cluster demand and readmission on")
	return l, nil
}

// restConfig says how to reach the API server: the kubeconfig when one is
// given, the pod's service account when the agent runs in a pod
// (KUBERNETES_SERVICE_HOST is set), otherwise nil: no cluster.
func restConfig(kubeconfig string) (*rest.Config, error) {
	switch {
	case kubeconfig != "":
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("cluster: kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("cluster: in-cluster config: %w", err)
		}
		return cfg, nil
	}
	return nil, nil
}

// queue hands a mark to Run without blocking the telemetry path.
func (l *link) queue(m predictor.Mark) {
	select {
	case l.marks <- m:
	default:
		l.log.WithField("pod", m.PodNamespace+"/"+m.PodName).Warn("readmission queue full: mark dropped")
	}
}

// Run serves cluster demand, readmits marked pods, counts finished runs
// against their owners' recommendations and records the Events of
// fail-opens until ctx ends. Each readmission runs on its own, because one
// may wait long on a PodDisruptionBudget, but all of them end with ctx.
func (l *link) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if l.demand != nil {
		g.Go(func() error { return l.demand.Run(ctx) })
	}
	g.Go(func() error { return l.countRuns(ctx) })
	g.Go(func() error { return l.watchReach(ctx) })
	g.Go(func() error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case m := <-l.marks:
				g.Go(func() error { l.readmit(ctx, m); return nil })
			case f := <-l.failOpens:
				l.recordFailOpen(ctx, f)
			}
		}
	})
	return g.Wait()
}

func (l *link) readmit(ctx context.Context, m predictor.Mark) {
	out, err := l.marker.Handle(ctx, m)
	switch {
	case err != nil && ctx.Err() == nil:
		l.a.CountReadmission("failed")
		l.log.WithError(err).WithField("pod", m.PodNamespace+"/"+m.PodName).Warn("readmission failed")
	case err != nil:
	case out.Ignored != "":
		l.a.CountReadmission("ignored")
	case out.Evicted:
		l.a.CountReadmission("evicted")
	case out.Advised:
		l.a.CountReadmission("advised")
	default:
		l.a.CountReadmission("recorded")
	}
}

// The agent's provisioner hears what waits, so its placements keep room for it.
var _ demand.PendingObserver = (*agent.ClusterProvisioner)(nil)
