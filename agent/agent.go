package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/migpro/migpro/cdi"
	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/plugin"
	"github.com/migpro/migpro/plugin/podresources"
)

// PodRef names the pod and container the kubelet gave a device to.
type PodRef = podresources.PodRef

// Assignments says which devices the kubelet has assigned, by device ID (MIG
// UUID): the kubelet's PodResources API in production, a fake in tests.
type Assignments = podresources.Lister

// Agent is the node daemon.
type Agent struct {
	cfg  Config
	log  logrus.FieldLogger
	gpu  GPU
	node gpu.Node // gpu.Node
	// policy is the placement policy Config.Policy names.
	policy partitioner.Policy
	// opened is set once Open has succeeded.
	opened bool
	part   *partitioner.Partitioner
	cdi    *cdi.Writer
	ckpt   *checkpointStore
	inv    *inventory
	pods   Assignments
	// watch is telemetry and prediction; nil when TelemetryDir is "off".
	watch *watch
	// cluster builds the link to a Kubernetes API server; nil: none.
	cluster ClusterFunc
	// clusterReady is the link, when it reports the API server's state.
	clusterReady atomic.Pointer[ReadyCluster]

	persistMu sync.Mutex // one persist at a time, snapshot to save

	mu        sync.Mutex
	holders   map[string]Holder // in-use instances by UUID, as checkpointed
	cdiNames  map[string]string // UUID -> qualified CDI name
	unhealthy map[string]bool   // UUIDs, plus "gpu/<index>" for whole GPUs
	idleSince map[string]time.Time
	podOf     map[string]PodRef

	// pending is the demand that waits for this node (pending.go).
	pending *pendingDemand

	registry *prometheus.Registry
	metrics  *metrics
	plugins  atomic.Pointer[plugin.Manager] // nil when the device plugins are off
	svcLn    atomic.Pointer[net.Listener]   // the metrics endpoint's, once listening
	running  atomic.Bool                    // Run has started every part
}

// Option adjusts an Agent for tests and embedding.
type Option func(*Agent)

// WithAssignments supplies the kubelet's view of assigned devices.
func WithAssignments(p Assignments) Option { return func(a *Agent) { a.pods = p } }

// WithLogger sets the logger.
func WithLogger(l logrus.FieldLogger) Option { return func(a *Agent) { a.log = l } }

// Cluster is the agent's link to a Kubernetes API server: instances made
// for pending pods, and readmission of marked pods. Package agent/kube is
// the implementation; the agent itself links no Kubernetes client, so
// programs that embed it (migctl demo) stay small.
type Cluster interface {
	// Run serves until ctx ends.
	Run(ctx context.Context) error
}

// ReadyCluster is a Cluster that knows whether the API server answers: the
// agent is not ready while Ready returns an error (service.go).
type ReadyCluster interface {
	Cluster
	Ready() error
}

// ClusterFunc builds the cluster link for an agent that is open and about
// to run; ctx is Run's, so stopping the agent abandons a link still
// starting. It returns a nil Cluster when there is no API server to talk to.
type ClusterFunc func(ctx context.Context, a *Agent) (Cluster, error)

// WithCluster links the agent to a Kubernetes API server through f.
func WithCluster(f ClusterFunc) Option { return func(a *Agent) { a.cluster = f } }

// GPU is the GPU node the agent runs on, and what its CDI specs need to
// know of the node's driver. Package agent/gpunode opens one, real or
// simulated; tests pass GPU{Node: n}. The agent never closes it: whoever
// opened it does, after Run.
type GPU struct {
	gpu.Node
	// NVML is the driver library the specs' driver part is read from; nil
	// means the real driver's (whose MIG minors file nvcdi's MIG device
	// edits read).
	NVML nvml.Interface
	// DriverRoot and DevRoot are where the node's driver files and device
	// nodes are when Config leaves DriverRoot and DevRoot empty; empty here
	// means / and the driver root.
	DriverRoot, DevRoot string
	// DriverEdits are container edits the specs carry along with the driver
	// (the simulated driver's state directory); nil: none.
	DriverEdits *specs.ContainerEdits
	// NoDriverHint is added to the error logged when the specs can carry no
	// driver, saying what to do about it.
	NoDriverHint string
}

// New wires an agent over the node g, ready to Run. It does no I/O: Run
// opens the state, the CDI specs and the partitioner, and recovers (see
// Open). A logger is required (WithLogger).
func New(cfg Config, g GPU, opts ...Option) (*Agent, error) {
	if g.Node == nil {
		return nil, errors.New("agent: no GPU node")
	}
	a := &Agent{cfg: cfg.Defaults(), gpu: g, node: g.Node, holders: map[string]Holder{},
		cdiNames: map[string]string{}, unhealthy: map[string]bool{}, idleSince: map[string]time.Time{}, podOf: map[string]PodRef{},
		pending: newPendingDemand(cfg.ReserveAfter)}
	for _, o := range opts {
		o(a)
	}
	if a.log == nil {
		return nil, errors.New("agent: no logger (WithLogger)")
	}
	if a.cfg.TelemetryDir != TelemetryOff {
		a.watch = newWatch(a)
	}
	var err error
	if a.policy, err = partitioner.PolicyByName(a.cfg.Policy); err != nil {
		return nil, err
	}
	if a.registry == nil {
		a.registry = prometheus.NewRegistry()
		a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	a.metrics = newMetrics()
	return a, nil
}

// Open does what New leaves to Run: the checkpoint's directory, the CDI
// writer (with the driver's part of the specs), the partitioner over the
// node, recovery (recover.go), telemetry and metrics. Run calls it first;
// tests and embedders that drive the agent without serving call it
// themselves. Once it has succeeded, it does nothing.
func (a *Agent) Open(ctx context.Context) error {
	if a.opened {
		return nil
	}
	var err error
	if a.ckpt, err = newCheckpointStore(a.cfg.StateDir); err != nil {
		return err
	}
	cdiOpts, err := a.cdiOptions()
	if err != nil {
		return err
	}
	if a.cdi, err = cdi.NewWriter(cdiOpts...); err != nil {
		return err
	}
	a.inv = newInventory(a)
	a.part, err = partitioner.New(timedNode{Node: a.node, m: a.metrics},
		partitioner.WithPolicy(a.policy),
		partitioner.WithCountedProfiles(a.cfg.Counted...),
		partitioner.WithAllowedProfiles(a.cfg.Profiles...),
		partitioner.WithLogger(a.log),
		partitioner.WithBusyCheck(a.busy),
		partitioner.WithHooks(partitioner.Hooks{AfterCreate: a.afterCreate, AfterDestroy: a.afterDestroy, Changed: a.inv.signal}))
	if err != nil {
		return err
	}
	for prof := range a.cfg.WarmPool {
		if !slices.Contains(a.part.Profiles(), prof) {
			return fmt.Errorf("warm pool: profile %q is not offered by this node (offered: %v)", prof, a.part.Profiles())
		}
	}
	if err := a.recover(ctx); err != nil {
		return fmt.Errorf("recover state: %w", err)
	}
	if a.cfg.TelemetryDir != TelemetryOff {
		if err := a.startTelemetry(a.registry); err != nil {
			return err
		}
	}
	if err := a.metrics.register(a.registry, a); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	a.opened = true
	return nil
}

// Run opens the agent's state and recovers it (Open), then serves the
// plugins, the local API and the background loops until ctx ends, and stops
// them. The GPU node stays open for its owner to close.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.Open(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 8) // one per goroutine started below, so none blocks
	var wg sync.WaitGroup
	start := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	var cluster Cluster
	if a.cluster != nil {
		var err error
		if cluster, err = a.cluster(ctx, a); err != nil {
			return err
		}
		if r, ok := cluster.(ReadyCluster); ok {
			a.clusterReady.Store(&r)
		}
	}
	if p := a.foreignPluginSocket(); p != "" {
		return fmt.Errorf("another device plugin serves MIG devices on this node (%s): two plugins would hand out the same MIG instances; remove it before starting migpro", p)
	}
	api, err := a.listenAPI()
	if err != nil {
		return err
	}
	svc, err := a.listenService()
	if err != nil {
		_ = api.ln.Close()
		return err
	}
	if svc != nil {
		// Known before anything answers: a caller that reached the local
		// API can read MetricsAddr.
		a.svcLn.Store(&svc.ln)
	}
	start("local API", api.serve)
	if svc != nil {
		start("metrics and probes", svc.serve)
	}
	a.reportKubelet()
	if a.cfg.PluginDir != "" {
		mgr, err := plugin.NewManager(a.inv, plugin.WithPluginDir(a.cfg.PluginDir), plugin.WithDomain(a.cfg.Domain),
			plugin.WithAllocateCheck(a.allocateCheck), plugin.WithPreference(a.prefer), plugin.WithLogger(a.log),
			plugin.WithAllocateObserver(a.metrics.observeAllocate))
		if err != nil {
			return err
		}
		a.plugins.Store(mgr)
		start("device plugins", mgr.Run)
	}
	start("health", a.watchHealth)
	if a.watch != nil {
		start("telemetry", a.watch.run)
	}
	start("maintenance", a.maintain)
	if cluster != nil {
		start("cluster", cluster.Run)
	}
	a.running.Store(true)
	a.log.WithFields(logrus.Fields{"socket": a.cfg.Socket, "metrics_addr": a.cfg.MetricsAddr, "gpus": len(a.node.Devices()), "profiles": a.part.Profiles()}).Info("migpro agent running")
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
		cancel()
	}
	a.running.Store(false)
	wg.Wait()
	if a.cfg.CleanupOnExit {
		// ctx has ended; the cleanup still needs its values, not its end.
		if err := a.cleanup(context.WithoutCancel(ctx)); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}

// Config is the agent's configuration, with defaults filled in.
func (a *Agent) Config() Config { return a.cfg }

// Logger is the agent's logger.
func (a *Agent) Logger() logrus.FieldLogger { return a.log }

// Partitioner exposes the partitioner, for tests and embedding.
func (a *Agent) Partitioner() *partitioner.Partitioner { return a.part }

func (a *Agent) cdiName(uuid string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.cdiNames[uuid]
	return n, ok
}

// healthyLocked is healthy for callers that hold a.mu.
func (a *Agent) healthyLocked(in partitioner.Instance) bool {
	return !a.unhealthy[in.UUID] && !a.unhealthy[gpuKey(in.GPU)]
}

func gpuKey(index int) string { return fmt.Sprintf("gpu/%d", index) }
