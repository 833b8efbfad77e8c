package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/migpro/migpro/partitioner"
)

// DriverName is the DRA driver's name: the domain of its device attributes
// (device.attributes["migpro.dev"].profile) and what DeviceClasses select.
const DriverName = "migpro.dev"

// ownerPrefix starts the holder of every instance prepared for a claim:
// "dra:<claim UID>:<device name>".
const ownerPrefix = "dra:"

func owner(claimUID, device string) string { return ownerPrefix + claimUID + ":" + device }

// Backend is what the driver needs from the agent (*agent.Agent implements
// it).
type Backend interface {
	Partitioner() *partitioner.Partitioner
	// PrepareAt gives owner an instance of profile at exactly pin: the one
	// it already holds, an idle one there, or a new one, checkpointed
	// before it returns with the instance's qualified CDI name.
	PrepareAt(ctx context.Context, profile string, pin partitioner.Pin, owner string) (partitioner.Instance, string, error)
	// ReleaseOwners returns every instance whose holder starts with prefix
	// to the idle pool and checkpoints.
	ReleaseOwners(prefix string) ([]partitioner.Instance, error)
	Healthy(partitioner.Instance) bool
	GPUHealthy(index int) bool
	// Subscribe is signalled whenever instances or health may have changed.
	Subscribe() <-chan struct{}
}

// Driver is the DRA driver of one node.
type Driver struct {
	b        Backend
	kube     kubernetes.Interface
	nodeName string
	log      logrus.FieldLogger
	root     string // the kubelet's root directory
	gpus     []gpuInfo
	byName   map[string]placement

	metrics  *metrics
	registry prometheus.Registerer

	mu        sync.Mutex
	helper    *kubeletplugin.Helper
	last      []resourceslice.Slice
	publishes atomic.Int64
}

// Option adjusts a Driver.
type Option func(*Driver)

// WithLogger sets the logger. It is required: New refuses to build without
// one (muted callers pass internal/quietlog).
func WithLogger(l logrus.FieldLogger) Option { return func(d *Driver) { d.log = l } }

// WithKubeletRoot sets the kubelet's root directory, which holds
// plugins_registry/ and plugins/ (default /var/lib/kubelet).
func WithKubeletRoot(dir string) Option { return func(d *Driver) { d.root = dir } }

// WithRegistry registers the driver's metrics in r (Link passes the
// agent's registry).
func WithRegistry(r prometheus.Registerer) Option { return func(d *Driver) { d.registry = r } }

// New builds the driver for a node from the agent's GPUs. kube must reach
// the API server; nodeName is the node's name there.
func New(b Backend, kube kubernetes.Interface, nodeName string, opts ...Option) (*Driver, error) {
	if nodeName == "" {
		return nil, errors.New("DRA driver: no node name (set --node-name or $NODE_NAME)")
	}
	d := &Driver{b: b, kube: kube, nodeName: nodeName, root: "/var/lib/kubelet", byName: map[string]placement{}}
	for _, o := range opts {
		o(d)
	}
	if d.log == nil {
		return nil, errors.New("DRA driver: no logger (WithLogger)")
	}
	d.metrics = newMetrics()
	if d.registry != nil {
		if err := d.metrics.register(d.registry); err != nil {
			return nil, fmt.Errorf("DRA driver: metrics: %w", err)
		}
	}
	part := b.Partitioner()
	for _, g := range part.GPUs() {
		dev, ok := part.Device(g.Index)
		if !ok {
			continue
		}
		profs, err := dev.Profiles()
		if err != nil {
			return nil, fmt.Errorf("DRA driver: GPU %d profiles: %w", g.Index, err)
		}
		d.gpus = append(d.gpus, gpuInfo{index: g.Index, model: g.Model, uuid: g.UUID, slots: g.Slots, slices: g.Slices, profiles: profs})
	}
	for _, p := range placements(d.gpus) {
		d.byName[deviceName(p.gpu, p.profile.Name, p.at.Start)] = p
	}
	return d, nil
}

// Publishes counts the ResourceSlice updates handed to the slice
// controller: one per change of what the node offers.
func (d *Driver) Publishes() int64 { return d.publishes.Load() }

// ErrNoDRA means the API server does not serve resource.k8s.io/v1.
var ErrNoDRA = errors.New("the API server does not serve resource.k8s.io/v1 (DRA is off: Kubernetes 1.33 or older, or the DynamicResourceAllocation gate off)")

// Available checks that the API server serves resource.k8s.io/v1 with
// ResourceSlices.
func (d *Driver) Available() error {
	list, err := d.kube.Discovery().ServerResourcesForGroupVersion("resource.k8s.io/v1")
	if apierrors.IsNotFound(err) {
		return ErrNoDRA
	}
	if err != nil {
		return fmt.Errorf("ask the API server for resource.k8s.io/v1: %w", err)
	}
	for _, r := range list.APIResources {
		if r.Name == "resourceslices" {
			return nil
		}
	}
	return ErrNoDRA
}

// Run registers the driver with the kubelet, publishes the node's devices
// and republishes on every change until ctx ends. On a cluster without DRA
// it logs one line and waits for ctx: the device plugins keep serving.
func (d *Driver) Run(ctx context.Context) error {
	if err := d.Available(); err != nil {
		if errors.Is(err, ErrNoDRA) {
			d.log.Warnf("DRA driver off: %v; the device plugins keep serving", err)
			<-ctx.Done()
			return nil
		}
		return err
	}
	changes := d.b.Subscribe()
	registry, data := filepath.Join(d.root, "plugins_registry"), filepath.Join(d.root, "plugins", DriverName)
	for _, dir := range []string{registry, data} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("DRA driver: %w", err)
		}
	}
	helper, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.DriverName(DriverName),
		kubeletplugin.KubeClient(d.kube),
		kubeletplugin.NodeName(d.nodeName),
		kubeletplugin.RegistrarDirectoryPath(registry),
		kubeletplugin.PluginDataDirectoryPath(data),
		kubeletplugin.HealthService(false))
	if err != nil {
		return fmt.Errorf("DRA driver: start the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	d.mu.Lock()
	d.helper = helper
	d.mu.Unlock()
	d.log.WithFields(logrus.Fields{"driver": DriverName, "node": d.nodeName, "devices": len(d.byName)}).Info("DRA driver registered")
	// A periodic republish catches what no signal reports (plans depend on
	// the demand mix, which decays with time).
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		if err := d.Republish(ctx); err != nil {
			d.log.WithError(err).Warn("DRA driver: publish ResourceSlices")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
		case <-tick.C:
		}
	}
}

// Republish recomputes the node's slices and hands them to the slice
// controller when they changed.
func (d *Driver) Republish(ctx context.Context) error {
	slices := d.Slices()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.helper == nil || apiequality.Semantic.DeepEqual(slices, d.last) {
		return nil
	}
	err := d.helper.PublishResources(ctx, resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{d.nodeName: {Slices: slices}}})
	if err == nil {
		d.last = slices
		d.publishes.Add(1)
		n, devices := d.specBytes(slices)
		d.metrics.publishes.Inc()
		d.metrics.publishBytes.Add(float64(n))
		d.log.WithFields(logrus.Fields{"slices": len(slices), "devices": devices, "bytes": n}).Debug("DRA: published ResourceSlices")
	}
	return err
}

// specBytes is the size of the pool's slices as the API server stores
// them (protobuf specs), and the number of devices in them.
func (d *Driver) specBytes(slices []resourceslice.Slice) (n, devices int) {
	for _, s := range slices {
		spec := resourceapi.ResourceSliceSpec{Driver: DriverName, NodeName: &d.nodeName,
			Pool:    resourceapi.ResourcePool{Name: d.nodeName, ResourceSliceCount: int64(len(slices))},
			Devices: s.Devices, SharedCounters: s.SharedCounters}
		n += spec.Size()
		devices += len(s.Devices)
	}
	return n, devices
}

// Slices is what the node offers now, in preference order.
func (d *Driver) Slices() []resourceslice.Slice {
	part := d.b.Partitioner()
	return build(state{gpus: d.gpus, instances: part.Instances(), plan: part.PlanAt, best: part.Plan, healthy: d.b.Healthy, gpuHealthy: d.b.GPUHealthy})
}

// HandleError logs errors of the kubelet plugin's background work (slice
// publishing, the gRPC servers). None ends the agent: the device plugins
// keep serving.
func (d *Driver) HandleError(_ context.Context, err error, msg string) {
	d.log.WithError(err).Errorf("DRA driver: %s", msg)
}

// WatchHealthStatus is not offered: health reaches the scheduler as device
// taints instead.
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
