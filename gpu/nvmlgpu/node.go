package nvmlgpu

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/gpu"
)

// DefaultPaths are where the NVIDIA driver puts its device nodes and MIG
// capability files on a real host.
var DefaultPaths = gpu.DriverPaths{
	DevDir:  "/dev",
	CapsDir: "/proc/driver/nvidia/capabilities",
}

// Node is every GPU NVML reports, behind gpu.Node.
type Node struct {
	lib     nvml.Interface
	devices []*Device
	paths   gpu.DriverPaths
	log     logrus.FieldLogger
	// eventWait bounds each EventSet.Wait so WatchXids notices a cancelled
	// context without the driver having to deliver an event first.
	eventWait time.Duration

	closeOnce sync.Once
	closeErr  error
}

var _ gpu.Node = (*Node)(nil)

// Option configures New and Open.
type Option func(*Node)

// WithPaths overrides where device nodes and capability files live; the
// simulator keeps its own under a directory it owns.
func WithPaths(p gpu.DriverPaths) Option { return func(n *Node) { n.paths = p } }

// WithLogger sets the logger (default: the standard logger).
func WithLogger(l logrus.FieldLogger) Option { return func(n *Node) { n.log = l } }

// WithEventWait sets how long one EventSet.Wait may block, which is also the
// longest WatchXids takes to stop after its context ends.
func WithEventWait(d time.Duration) Option {
	return func(n *Node) {
		if d > 0 {
			n.eventWait = d
		}
	}
}

// Open loads the system's libnvidia-ml and wraps it. Without the library it
// returns an error wrapping gpu.ErrNoLibrary.
func Open(opts ...Option) (*Node, error) {
	return New(nvml.New(), opts...)
}

// New initialises lib and wraps it. lib may be the real library or the
// simulator's; the adapter cannot tell them apart, which is the point.
func New(lib nvml.Interface, opts ...Option) (*Node, error) {
	n := &Node{lib: lib, paths: DefaultPaths, eventWait: 200 * time.Millisecond}
	for _, o := range opts {
		o(n)
	}
	if n.log == nil {
		return nil, errors.New("nvmlgpu: no logger (WithLogger)")
	}
	// go-nvml aborts the process with a symbol lookup error if anything else
	// is called after Init failed, so every failure here returns at once
	// without even a Shutdown.
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, fmt.Errorf("initialise NVML: %w", gpu.ErrNoLibrary)
		}
		return nil, driverError("initialise NVML", ret)
	}
	if err := n.discover(); err != nil {
		// Init succeeded, so Shutdown is safe; its own failure adds nothing
		// the caller can act on.
		_ = lib.Shutdown()
		return nil, err
	}
	return n, nil
}

func (n *Node) discover() error {
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return driverError("count GPUs", ret)
	}
	for i := 0; i < count; i++ {
		d, err := newDevice(i, n.lib)
		if err != nil {
			return err
		}
		n.devices = append(n.devices, d)
	}
	return nil
}

// Devices lists the GPUs in NVML index order.
func (n *Node) Devices() []gpu.Device {
	out := make([]gpu.Device, len(n.devices))
	for i, d := range n.devices {
		out[i] = d
	}
	return out
}

// Paths says where device nodes and capability files live.
func (n *Node) Paths() gpu.DriverPaths { return n.paths }

// Close shuts NVML down once; later calls return the first result.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
			n.closeErr = driverError("shut down NVML", ret)
		}
	})
	return n.closeErr
}
