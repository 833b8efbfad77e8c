package simgpu

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/nvmlgpu"
)

// DefaultSeed is the seed a node uses unless WithSeed says otherwise, so
// unseeded runs are reproducible too.
const DefaultSeed int64 = 1

// Node is a simulated MIG node: the nvmlgpu adapter over the simulated
// driver, plus controls tests use to play the part of workloads and faults.
type Node struct {
	*nvmlgpu.Node
	d   *driver
	lib *simLib
}

var _ gpu.Node = (*Node)(nil)

type config struct {
	seed        int64
	root        string
	migDisabled bool
	stateFile   string
	version     string
	adapterOpts []nvmlgpu.Option
	log         logrus.FieldLogger
}

// Option configures New and NewNode.
type Option func(*config)

// WithLogger sets the logger of the simulated driver and of its NVML
// adapter. It is required: New refuses to build without one (muted callers
// pass internal/quietlog).
func WithLogger(l logrus.FieldLogger) Option { return func(c *config) { c.log = l } }

// WithSeed sets the seed GPU and MIG UUIDs derive from.
func WithSeed(seed int64) Option { return func(c *config) { c.seed = seed } }

// WithRoot makes the node's device nodes and capability files under dir
// (dir/dev and dir/proc/driver/nvidia/capabilities). Without it the node
// makes no files and Paths is empty.
func WithRoot(dir string) Option { return func(c *config) { c.root = dir } }

// WithMIGDisabled starts every GPU with MIG mode off.
func WithMIGDisabled() Option { return func(c *config) { c.migDisabled = true } }

// WithStateFile keeps the driver state in path, the way the kernel driver
// outlives the agent on a real node: New loads it if the file exists (which
// overrides WithMIGDisabled) and every successful change is saved to it
// atomically. See the package documentation for what is kept and who may
// write it.
func WithStateFile(path string) Option { return func(c *config) { c.stateFile = path } }

// WithDriverVersion sets the driver version the node reports (default
// DriverVersion), as a driver upgrade changes it; InstallDriver lays out the
// files of the same version.
func WithDriverVersion(v string) Option { return func(c *config) { c.version = v } }

// WithAdapterOptions passes options through to the nvmlgpu adapter.
func WithAdapterOptions(opts ...nvmlgpu.Option) Option {
	return func(c *config) { c.adapterOpts = append(c.adapterOpts, opts...) }
}

// NewNode builds a node from a spec such as "a100-40gb:2,h100-80gb:1".
func NewNode(spec string, opts ...Option) (*Node, error) {
	mcs, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return New(mcs, opts...)
}

// New builds a node with the given GPUs, numbered in order.
func New(gpus []ModelCount, opts ...Option) (*Node, error) {
	c := config{seed: DefaultSeed}
	for _, o := range opts {
		o(&c)
	}
	if c.log == nil {
		return nil, errors.New("build simulated node: no logger (WithLogger)")
	}
	if c.version == "" {
		c.version = DriverVersion
	}
	d, err := newDriver(gpus, c.seed, c.migDisabled, c.log)
	if err != nil {
		return nil, fmt.Errorf("build simulated node: %w", err)
	}
	d.version = c.version
	if c.root != "" {
		files, err := newDevFiles(c.root, len(d.gpus), c.log)
		if err != nil {
			return nil, fmt.Errorf("build simulated node under %s: %w", c.root, err)
		}
		d.files = files
	}
	if c.stateFile != "" {
		if err := d.attachStateFile(c.stateFile); err != nil {
			return nil, fmt.Errorf("build simulated node: %w", err)
		}
	}
	lib := &simLib{Interface: &mock.Interface{}, d: d}
	adapterOpts := append([]nvmlgpu.Option{nvmlgpu.WithPaths(d.files.paths()), nvmlgpu.WithEventWait(20 * time.Millisecond), nvmlgpu.WithLogger(c.log)}, c.adapterOpts...)
	an, err := nvmlgpu.New(lib, adapterOpts...)
	if err != nil {
		return nil, fmt.Errorf("build simulated node: %w", err)
	}
	return &Node{Node: an, d: d, lib: lib}, nil
}

// newDriver builds the driver state of a fresh node: GPUs, no instances.
func newDriver(gpus []ModelCount, seed int64, migDisabled bool, log logrus.FieldLogger) (*driver, error) {
	d := &driver{seed: seed, latency: map[Op]time.Duration{}, log: log, version: DriverVersion}
	for _, mc := range gpus {
		m, err := lookupModel(mc.Model)
		if err != nil {
			return nil, err
		}
		if mc.Count < 1 {
			return nil, fmt.Errorf("count %d for %s: want at least 1", mc.Count, m.name)
		}
		for i := 0; i < mc.Count; i++ {
			g := &gpuState{d: d, index: len(d.gpus), model: m, migOn: !migDisabled, gis: map[int]*giState{}}
			g.uuid = deriveUUID("GPU", seed, "gpu", g.index, m.name)
			g.handle = &simDevice{Device: &mock.Device{}, g: g}
			d.gpus = append(d.gpus, g)
		}
	}
	if len(d.gpus) == 0 {
		return nil, fmt.Errorf("no GPUs given")
	}
	if len(d.gpus) > MaxGPUsPerSpec {
		return nil, fmt.Errorf("%d GPUs is more than the limit of %d", len(d.gpus), MaxGPUsPerSpec)
	}
	return d, nil
}

// spec is the node's canonical spec ("a100-40gb:2,h100-80gb:1"): runs of
// one model are merged, so equal nodes compare equal however they were
// spelled.
func (d *driver) spec() string {
	var terms []string
	for i := 0; i < len(d.gpus); {
		j := i
		for j < len(d.gpus) && d.gpus[j].model == d.gpus[i].model {
			j++
		}
		terms = append(terms, fmt.Sprintf("%s:%d", d.gpus[i].model.name, j-i))
		i = j
	}
	return strings.Join(terms, ",")
}

// Lib is the simulated NVML itself, for tests that act as another NVML
// client (the way nvidia-smi would) behind the adapter's back.
func (n *Node) Lib() nvml.Interface { return n.lib }

// NodeKind says what the device nodes under the root are; empty without a root.
func (n *Node) NodeKind() NodeKind {
	if n.d.files == nil {
		return ""
	}
	return n.d.files.kind
}

// ModelOf is the simulated model name ("a100-40gb") of a GPU.
func (n *Node) ModelOf(gpuIndex int) (string, error) {
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	g, err := n.d.gpuLocked(gpuIndex)
	if err != nil {
		return "", err
	}
	return g.model.name, nil
}

func (d *driver) gpuLocked(i int) (*gpuState, error) {
	if i < 0 || i >= len(d.gpus) {
		return nil, fmt.Errorf("no simulated GPU %d (the node has %d)", i, len(d.gpus))
	}
	return d.gpus[i], nil
}

func (d *driver) giLocked(gpuIndex, giID int) (*giState, error) {
	g, err := d.gpuLocked(gpuIndex)
	if err != nil {
		return nil, err
	}
	gi, ok := g.gis[giID]
	if !ok {
		return nil, fmt.Errorf("no GPU instance %d on simulated GPU %d: %w", giID, gpuIndex, gpu.ErrNotFound)
	}
	return gi, nil
}
