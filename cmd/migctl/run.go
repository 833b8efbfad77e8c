package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/pkg/identifiers"

	"github.com/migpro/migpro/runner"
)

func init() {
	register("run", "run a containerd container on a MIG instance; restart it on a larger one before it runs out of memory", runRun)
}

const runUsage = "usage: migctl run --profile PROFILE [--socket AGENT_SOCK] [--containerd SOCK] [--namespace NS] [--id ID] " +
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

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runRun(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	profile := fs.String("profile", "", "MIG profile to start on, e.g. 1g.10gb (required)")
	socket := fs.String("socket", defaultSocket, "the agent's local API socket")
	ctrd := fs.String("containerd", "/run/containerd/containerd.sock", "containerd's gRPC socket")
	ns := fs.String("namespace", "default", "containerd namespace")
	id := fs.String("id", "", "container id (default migctl-run-<random>); restarts run as ID-r1, ID-r2, ...")
	maxRestarts := fs.Int("max-restarts", 2, "restarts on a larger instance at most")
	poll := fs.Duration("poll", 500*time.Millisecond, "how often to read the agent's predictions")
	stopTimeout := fs.Duration("stop-timeout", 10*time.Second, "time between SIGTERM and SIGKILL when stopping the container")
	cdiDirs := fs.String("cdi-dir", "", "comma-separated CDI spec directories where the agent writes (default /etc/cdi,/var/run/cdi)")
	snapshotter := fs.String("snapshotter", "overlayfs", "containerd snapshotter")
	runcBinary := fs.String("runc-binary", "", "runc binary for io.containerd.runc.v2 (default: the runtime's)")
	runcRoot := fs.String("runc-root", "", "runc state directory (default: the runtime's)")
	netHost := fs.Bool("net-host", false, "use the host's network namespace")
	var env listFlag
	fs.Var(&env, "env", "set an environment variable K=V in the container (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v; %s", err, runUsage)
	}
	if fs.NArg() == 0 {
		return usagef("no image given; %s", runUsage)
	}
	if *profile == "" {
		return usagef("--profile is required (a MIG profile such as 1g.10gb); %s", runUsage)
	}
	if *maxRestarts < 0 || *poll <= 0 || *stopTimeout < 0 {
		return usagef("--max-restarts and --stop-timeout must not be negative, --poll must be positive")
	}
	for _, e := range env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return usagef("--env %q: want KEY=VALUE", e)
		}
	}
	if *id == "" {
		b := make([]byte, 4)
		rand.Read(b)
		*id = "migctl-run-" + hex.EncodeToString(b)
	}
	// The last restart's id must be valid too.
	if err := identifiers.Validate(fmt.Sprintf("%s-r%d", *id, *maxRestarts)); err != nil {
		return usagef("--id %q: %v", *id, err)
	}
	var dirs []string
	if *cdiDirs != "" {
		dirs = strings.Split(*cdiDirs, ",")
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

	engine, closeEngine, err := newRunEngine(ctx, *ctrd, stdout, runner.WithNamespace(*ns), runner.WithSnapshotter(*snapshotter),
		runner.WithRunc(*runcBinary, *runcRoot), runner.WithCDISpecDirs(dirs...), runner.WithNetHost(*netHost))
	if err != nil {
		return err
	}
	var closeOnce sync.Once
	closeAll := func() { closeOnce.Do(func() { closeEngine() }) }
	defer closeAll()
	r, err := runner.New(runner.NewAgentClient(*socket), engine, runner.Config{
		ID: *id, Image: fs.Arg(0), Args: fs.Args()[1:], Env: env, Profile: *profile,
		MaxRestarts: *maxRestarts, Poll: *poll, StopTimeout: *stopTimeout, Log: runStderr,
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
		fmt.Fprintf(runStderr, "migctl run: stopped on %v\n", got)
		exitProcess(128 + int(got.(syscall.Signal)))
		return nil
	default:
	}
	if err != nil {
		return agentErr(err)
	}
	if res.Code != 0 {
		exitProcess(res.Code)
	}
	return nil
}
