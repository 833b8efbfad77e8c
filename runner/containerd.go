package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/client"
	ctrdcdi "github.com/containerd/containerd/v2/pkg/cdi"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// containerdConfig is what NewContainerd assembles from its options.
type containerdConfig struct {
	Socket         string
	Namespace      string
	Snapshotter    string
	RuncBinary     string
	RuncRoot       string
	CDISpecDirs    []string
	NetHost        bool
	Stdout, Stderr io.Writer
}

// ContainerdOption configures a Containerd engine.
type ContainerdOption func(*containerdConfig)

// WithNamespace sets the containerd namespace (default "default").
func WithNamespace(ns string) ContainerdOption { return func(c *containerdConfig) { c.Namespace = ns } }

// WithSnapshotter sets the snapshotter that unpacks the image (default
// overlayfs).
func WithSnapshotter(s string) ContainerdOption {
	return func(c *containerdConfig) { c.Snapshotter = s }
}

// WithRunc selects the runc binary and its state directory for
// io.containerd.runc.v2, as ctr run's --runc-binary and --runc-root do
// (empty: the runtime's).
func WithRunc(binary, root string) ContainerdOption {
	return func(c *containerdConfig) { c.RuncBinary, c.RuncRoot = binary, root }
}

// WithCDISpecDirs sets where the agent writes instance specs (default the
// CDI defaults, /etc/cdi and /var/run/cdi).
func WithCDISpecDirs(dirs ...string) ContainerdOption {
	return func(c *containerdConfig) { c.CDISpecDirs = dirs }
}

// WithNetHost runs containers in the host's network namespace.
func WithNetHost(on bool) ContainerdOption { return func(c *containerdConfig) { c.NetHost = on } }

// WithOutput sends the containers' output to stdout and stderr (default:
// discarded).
func WithOutput(stdout, stderr io.Writer) ContainerdOption {
	return func(c *containerdConfig) { c.Stdout, c.Stderr = stdout, stderr }
}

// Containerd is the real Engine: containerd through its Go client, with the
// instance's CDI device injected client-side (pkg/cdi.WithCDIDevices).
type Containerd struct {
	cfg    containerdConfig
	client *client.Client

	mu    sync.Mutex
	image client.Image
	tasks map[string]client.Task
}

// NewContainerd connects to the containerd at socket (e.g.
// /run/containerd/containerd.sock) and points the process-wide CDI cache at
// the spec directories of WithCDISpecDirs.
func NewContainerd(ctx context.Context, socket string, opts ...ContainerdOption) (*Containerd, error) {
	cfg := containerdConfig{Socket: socket, Namespace: "default"}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Snapshotter == "" {
		cfg.Snapshotter = "overlayfs"
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	if len(cfg.CDISpecDirs) > 0 {
		if err := cdi.Configure(cdi.WithSpecDirs(cfg.CDISpecDirs...)); err != nil {
			return nil, fmt.Errorf("CDI spec directories %v: %w", cfg.CDISpecDirs, err)
		}
	}
	cl, err := client.New(cfg.Socket, client.WithDefaultNamespace(cfg.Namespace))
	if err != nil {
		return nil, fmt.Errorf("containerd at %s: %w", cfg.Socket, err)
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cl.Version(vctx); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("cannot reach containerd at %s (is it running? see --containerd): %w", cfg.Socket, err)
	}
	return &Containerd{cfg: cfg, client: cl, tasks: map[string]client.Task{}}, nil
}

// Close closes the connection to containerd.
func (c *Containerd) Close() error { return c.client.Close() }

func (c *Containerd) ns(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, c.cfg.Namespace)
}

// Prepare finds the image (as given, then in its normalised form such as
// docker.io/library/busybox:latest), pulls it when absent, and unpacks it
// for the snapshotter.
func (c *Containerd) Prepare(ctx context.Context, ref string) error {
	ctx = c.ns(ctx)
	img, err := c.client.GetImage(ctx, ref)
	if errdefs.IsNotFound(err) {
		full := ref
		if named, perr := reference.ParseDockerRef(ref); perr == nil {
			full = named.String()
		}
		if img, err = c.client.GetImage(ctx, full); errdefs.IsNotFound(err) {
			img, err = c.client.Pull(ctx, full, client.WithPullUnpack, client.WithPullSnapshotter(c.cfg.Snapshotter))
			if err != nil {
				return fmt.Errorf("not in namespace %q and cannot be pulled: %w", c.cfg.Namespace, err)
			}
		}
	}
	if err != nil {
		return err
	}
	unpacked, err := img.IsUnpacked(ctx, c.cfg.Snapshotter)
	if err != nil {
		return fmt.Errorf("check unpacked: %w", err)
	}
	if !unpacked {
		if err := img.Unpack(ctx, c.cfg.Snapshotter); err != nil {
			return fmt.Errorf("unpack for %s: %w", c.cfg.Snapshotter, err)
		}
	}
	c.mu.Lock()
	c.image = img
	c.mu.Unlock()
	return nil
}

// Start creates the container with the image's config, the command and env
// given, and the CDI device, then starts its task. On failure it removes
// what it made.
func (c *Containerd) Start(ctx context.Context, ct Container) (<-chan Exit, error) {
	ctx = c.ns(ctx)
	c.mu.Lock()
	img := c.image
	c.mu.Unlock()
	if img == nil { // Prepare was not called
		if err := c.Prepare(ctx, ct.Image); err != nil {
			return nil, fmt.Errorf("image %s: %w", ct.Image, err)
		}
		c.mu.Lock()
		img = c.image
		c.mu.Unlock()
	}
	specOpts := []oci.SpecOpts{oci.WithImageConfig(img)}
	if len(ct.Args) > 0 {
		specOpts = append(specOpts, oci.WithProcessArgs(ct.Args...))
	}
	if len(ct.Env) > 0 {
		specOpts = append(specOpts, oci.WithEnv(ct.Env))
	}
	if c.cfg.NetHost {
		specOpts = append(specOpts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostHostsFile, oci.WithHostResolvconf)
	}
	// Last, so the CDI edits (env, mounts, hooks) are not overwritten.
	specOpts = append(specOpts, ctrdcdi.WithCDIDevices(ct.Device))
	opts := []client.NewContainerOpts{
		client.WithImage(img),
		client.WithSnapshotter(c.cfg.Snapshotter),
		client.WithNewSnapshot(ct.ID+"-snapshot", img),
	}
	if c.cfg.RuncBinary != "" || c.cfg.RuncRoot != "" {
		opts = append(opts, client.WithRuntime("io.containerd.runc.v2", &options.Options{BinaryName: c.cfg.RuncBinary, Root: c.cfg.RuncRoot}))
	}
	opts = append(opts, client.WithNewSpec(specOpts...))
	// NewContainer makes the snapshot before it finds the id taken, and
	// leaves it behind: check first.
	if _, err := c.client.LoadContainer(ctx, ct.ID); err == nil {
		return nil, fmt.Errorf("container %q already exists in namespace %q: %w", ct.ID, c.cfg.Namespace, errdefs.ErrAlreadyExists)
	} else if !errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("look up container %q: %w", ct.ID, err)
	}
	ctr, err := c.client.NewContainer(ctx, ct.ID, opts...)
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	cleanup := func(task client.Task) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if task != nil {
			_, _ = task.Delete(dctx, client.WithProcessKill)
		}
		_ = ctr.Delete(dctx, client.WithSnapshotCleanup)
	}
	task, err := ctr.NewTask(ctx, cio.NewCreator(cio.WithStreams(nil, c.cfg.Stdout, c.cfg.Stderr)))
	if err != nil {
		cleanup(nil)
		return nil, fmt.Errorf("create task: %w", err)
	}
	// The wait must outlive an interrupt of ctx: the exit after SIGTERM is
	// still wanted.
	statusC, err := task.Wait(context.WithoutCancel(ctx))
	if err != nil {
		cleanup(task)
		return nil, fmt.Errorf("wait for task: %w", err)
	}
	if err := task.Start(ctx); err != nil {
		cleanup(task)
		return nil, fmt.Errorf("start task: %w", err)
	}
	c.mu.Lock()
	c.tasks[ct.ID] = task
	c.mu.Unlock()
	exitC := make(chan Exit, 1)
	go func() {
		st := <-statusC
		code, _, err := st.Result()
		exitC <- Exit{Code: int(code), Err: err}
	}()
	return exitC, nil
}

// Kill signals the container's task.
func (c *Containerd) Kill(ctx context.Context, id string, sig syscall.Signal) error {
	c.mu.Lock()
	task := c.tasks[id]
	c.mu.Unlock()
	if task == nil {
		return nil
	}
	if err := task.Kill(c.ns(ctx), sig); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("kill %s with %v: %w", id, sig, err)
	}
	return nil
}

// Remove deletes the task (killing it) and the container with its snapshot.
func (c *Containerd) Remove(ctx context.Context, id string) error {
	ctx = c.ns(ctx)
	c.mu.Lock()
	task := c.tasks[id]
	delete(c.tasks, id)
	c.mu.Unlock()
	var errs []error
	if task != nil {
		// The shim may exit as its last task dies: "ttrpc: closed" is fine.
		if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) &&
			!strings.Contains(err.Error(), "ttrpc: closed") {
			errs = append(errs, fmt.Errorf("delete task: %w", err))
		}
	}
	ctr, err := c.client.LoadContainer(ctx, id)
	switch {
	case errdefs.IsNotFound(err):
	case err != nil:
		errs = append(errs, fmt.Errorf("load container: %w", err))
	default:
		if err := ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete container: %w", err))
		}
	}
	return errors.Join(errs...)
}
