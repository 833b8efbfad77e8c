package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/pkg/identifiers"
	"github.com/spf13/cobra"

	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/runner"
)

const runUsage = "usage: migpro-lab run --profile PROFILE [--socket AGENT_SOCK] [--containerd SOCK] [--namespace NS] [--id ID] " +
	"[--max-restarts N] [--poll 500ms] [--stop-timeout 10s] [--env K=V]... IMAGE [ARGS...]"

// Seams for tests: the engine, migctl's own stderr, and the process exit
// that carries the container's exit code.
var (
	newRunEngine = func(ctx context.Context, socket string, stdout io.Writer, opts ...runner.ContainerdOption) (runner.Engine, func() error, error) {
		c, err := runner.NewContainerd(ctx, socket, append(opts, runner.WithOutput(stdout, runStderr))...)
		if err != nil {
			return nil, nil, err
		}
		return c, c.Close, nil
	}
	runStderr   io.Writer = os.Stderr
	exitProcess           = os.Exit
)

// runOptions are run's flags.
type runOptions struct {
	agent                             ctl.AgentOptions
	profile, ctrd, ns, id, cdiDirs    string
	snapshotter, runcBinary, runcRoot string
	maxRestarts                       int
	poll, stopTimeout                 time.Duration
	netHost                           bool
	env                               []string
}

func newRunCmd() *cobra.Command {
	o := &runOptions{}
	const short = "run a containerd container on a MIG instance; restart it on a larger one before it runs out of memory"
	cmd := &cobra.Command{
		Use:   "run IMAGE [ARG…]",
		Short: short,
		Long: short + ".\n\nRuns the container on an instance of --profile through containerd; when the agent's\n" +
			"predictor marks it, stops it and starts it again on the next larger profile.\n" +
			"Everything after IMAGE goes to the container.",
		Example: "  migpro-lab run --profile 1g.10gb docker.io/library/python:3 python train.py\n" +
			"  migpro-lab run --profile 2g.20gb --env CUDA_LOG=1 --max-restarts 1 IMAGE",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.agent.Complete(cmd.Flags()); err != nil {
				return err
			}
			return o.run(cmd.OutOrStdout(), args)
		},
	}
	f := cmd.Flags()
	// Everything after the image goes to the container.
	f.SetInterspersed(false)
	f.StringVar(&o.profile, "profile", "", "MIG profile to start on, e.g. 1g.10gb (required)")
	o.agent.AddFlags(f, 0)
	f.StringVar(&o.ctrd, "containerd", "/run/containerd/containerd.sock", "containerd's gRPC socket")
	f.StringVar(&o.ns, "namespace", "default", "containerd namespace")
	f.StringVar(&o.id, "id", "", "container id (default migctl-run-<random>); restarts run as ID-r1, ID-r2, ...")
	f.IntVar(&o.maxRestarts, "max-restarts", 2, "restarts on a larger instance at most")
	f.DurationVar(&o.poll, "poll", 500*time.Millisecond, "how often to read the agent's predictions")
	f.DurationVar(&o.stopTimeout, "stop-timeout", 10*time.Second, "time between SIGTERM and SIGKILL when stopping the container")
	f.StringVar(&o.cdiDirs, "cdi-dir", "", "comma-separated CDI spec directories where the agent writes (default /etc/cdi,/var/run/cdi)")
	f.StringVar(&o.snapshotter, "snapshotter", "overlayfs", "containerd snapshotter")
	f.StringVar(&o.runcBinary, "runc-binary", "", "runc binary for io.containerd.runc.v2 (default: the runtime's)")
	f.StringVar(&o.runcRoot, "runc-root", "", "runc state directory (default: the runtime's)")
	f.BoolVar(&o.netHost, "net-host", false, "use the host's network namespace")
	f.StringArrayVar(&o.env, "env", nil, "set an environment variable K=V in the container (repeatable)")
	return cmd
}

func (o *runOptions) run(stdout io.Writer, args []string) error {
	if len(args) == 0 {
		return ctl.Usagef("no image given; %s", runUsage)
	}
	if o.profile == "" {
		return ctl.Usagef("--profile is required (a MIG profile such as 1g.10gb); %s", runUsage)
	}
	if o.maxRestarts < 0 || o.poll <= 0 || o.stopTimeout < 0 {
		return ctl.Usagef("--max-restarts and --stop-timeout must not be negative, --poll must be positive")
	}
	for _, e := range o.env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return ctl.Usagef("--env %q: want KEY=VALUE", e)
		}
	}
	if o.id == "" {
		b := make([]byte, 4)
		rand.Read(b)
		o.id = "migctl-run-" + hex.EncodeToString(b)
	}
	// The last restart's id must be valid too.
	if err := identifiers.Validate(fmt.Sprintf("%s-r%d", o.id, o.maxRestarts)); err != nil {
		return ctl.Usagef("--id %q: %v", o.id, err)
	}
	var dirs []string
	if o.cdiDirs != "" {
		dirs = strings.Split(o.cdiDirs, ",")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigC := make(chan os.Signal, 1)
	signal.Notify(sigC, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigC)
	var got os.Signal
	gotC := make(chan struct{})
	go func() {
		select {
		case got = <-sigC:
			close(gotC)
			cancel()
		case <-ctx.Done():
		}
	}()

	engine, closeEngine, err := newRunEngine(ctx, o.ctrd, stdout, runner.WithNamespace(o.ns), runner.WithSnapshotter(o.snapshotter),
		runner.WithRunc(o.runcBinary, o.runcRoot), runner.WithCDISpecDirs(dirs...), runner.WithNetHost(o.netHost))
	if err != nil {
		return err
	}
	var closeOnce sync.Once
	closeAll := func() { closeOnce.Do(func() { closeEngine() }) }
	defer closeAll()
	r, err := runner.New(runner.NewAgentClient(o.agent.Socket), engine, runner.Config{
		ID: o.id, Image: args[0], Args: args[1:], Env: o.env, Profile: o.profile,
		MaxRestarts: o.maxRestarts, Poll: o.poll, StopTimeout: o.stopTimeout, Log: runStderr,
	})
	if err != nil {
		return err
	}
	res, err := r.Run(ctx)
	closeAll()
	select {
	case <-gotC:
		// Whatever the run was doing, it has stopped its container and
		// freed its instance: exit as a process killed by the signal would.
		fmt.Fprintf(runStderr, "migpro-lab run: stopped on %v\n", got)
		exitProcess(128 + int(got.(syscall.Signal)))
		return nil
	default:
	}
	if err != nil {
		return ctl.AgentErr(err)
	}
	if res.Code != 0 {
		exitProcess(res.Code)
	}
	return nil
}
