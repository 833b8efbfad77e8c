package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/migpro/migpro/internal/buildinfo"
	"github.com/migpro/migpro/internal/cli"
	"github.com/migpro/migpro/internal/klogrus"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/agent/gpunode"
	"github.com/migpro/migpro/agent/kube"
	"github.com/migpro/migpro/cdi"
	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/dra"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/nodeview"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/plugin/podresources"
	"github.com/migpro/migpro/readmit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, errExit) {
			os.Exit(0)
		}
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintf(os.Stderr, "migpro-agent: %v (run 'migpro-agent --help')\n", u.error)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "migpro-agent: %v\n", err)
		os.Exit(1)
	}
}

// errExit ends the agent with status 0 after --help or --version.
var errExit = errors.New("done")

// usageError is a bad command line: exit status 2.
type usageError struct{ error }

// stdout is where --help and --version write (tests replace it).
var stdout io.Writer = os.Stdout

func run(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("migpro-agent", pflag.ContinueOnError)
	var cfg agent.Config
	def := agent.Config{}.Defaults() // the flags' defaults are the agent's own
	fs.StringVar(&cfg.Simulate, "simulate", "", "run on simulated GPUs, e.g. a100-40gb:2,h100-80gb (default: real NVML)")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed for simulated UUIDs")
	fs.StringVar(&cfg.SimRoot, "sim-root", "", "directory of the simulated GPUs' device nodes and driver state (default <state-dir>/sim)")
	simDriver := fs.String("sim-driver", simDriverAuto, "with --simulate, directory of the simulated driver's stubs (libcuda.so, libnvidia-ml.so, nvidia-smi), installed at start under the driver root; \""+simDriverAuto+"\": <agent dir>/simdriver or <agent dir>/../lib/migpro/simdriver, whichever holds them; \"off\": install nothing")
	fs.StringVar(&cfg.SimDriverVersion, "sim-driver-version", simgpu.DriverVersion, "with --simulate, the driver version the simulated NVML reports and the stubs are installed as")
	fs.StringVar(&cfg.Socket, "socket", def.Socket, "local API unix socket")
	fs.StringVar(&cfg.StateDir, "state-dir", def.StateDir, "directory of the checkpoint")
	fs.StringVar(&cfg.CDISpecDir, "cdi-dir", def.CDISpecDir, "CDI spec directory")
	fs.StringVar(&cfg.CDIKind, "cdi-kind", def.CDIKind, "CDI kind of the instances")
	fs.StringVar(&cfg.DriverRoot, "driver-root", "", "root of the NVIDIA driver's libraries and binaries put in the CDI specs, and where libnvidia-ml.so.1 is loaded from when set (default /, loading NVML by name; with --simulate, the simulated node's root --sim-root, where the simulated driver is installed)")
	fs.StringVar(&cfg.HostDriverRoot, "host-driver-root", "", "the host's path of --driver-root, written into the CDI specs, when the agent runs in a container that mounts the host's driver root elsewhere (default: --driver-root)")
	fs.StringVar(&cfg.DevRoot, "dev-root", "", "root of the NVIDIA device nodes, the directory holding dev/ (default: the driver root)")
	fs.StringVar(&cfg.NVIDIACDIHookPath, "nvidia-cdi-hook-path", cdi.DefaultNVIDIACDIHookPath, "host path of nvidia-cdi-hook (NVIDIA container toolkit) named in the CDI specs' hooks; when it is missing at start the specs leave the hooks out, with a warning; \""+agent.NoCDIHook+"\": leave them out")
	fs.StringVar(&cfg.NVIDIACDIHookCheck, "nvidia-cdi-hook-check", "", "where the agent sees --nvidia-cdi-hook-path to check it exists, when it runs in a container that mounts the host's file elsewhere (default: --nvidia-cdi-hook-path)")
	fs.StringVar(&cfg.PluginDir, "plugin-dir", defaults.PluginDir, "kubelet device-plugin directory; empty disables the plugins")
	fs.StringVar(&cfg.Domain, "domain", def.Domain, "resource name domain: <domain>/mig-<profile>")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig of the API server, for the cluster demand source (default: in-cluster config when KUBERNETES_SERVICE_HOST is set, else off)")
	fs.StringVar(&cfg.NodeName, "node-name", defaultNodeName(), "this node's name in the cluster (default: $NODE_NAME, then the hostname)")
	podRes := fs.String("pod-resources", podresources.DefaultSocket, "kubelet PodResources socket; empty disables use tracking")
	fs.StringVar(&cfg.Policy, "policy", def.Policy, "placement policy: "+strings.Join(partitioner.PolicyNames(), ", "))
	fs.DurationVar(&cfg.ReserveAfter, "reserve-after", 0, fmt.Sprintf("reserve room for a local caller still waiting after this long, on nodes of %d GPUs or more (0: never; docs/replay.md measures it)", partitioner.MinReserveGPUs))
	counted := fs.String("counted", "", "comma-separated profiles that reachability counts (default all)")
	fs.StringSliceVar(&cfg.Profiles, "profiles", nil, "comma-separated allow-list: the only profiles created and advertised (default: every profile the GPUs offer)")
	warm := fs.String("warm-pool", "", "idle instances to keep ready, e.g. 1g.10gb=1,2g.20gb=1")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "destroy instances idle longer than this (0: only when their space is needed)")
	fs.DurationVar(&cfg.TrackEvery, "track-every", def.TrackEvery, "period of use tracking, warm pool and idle reaping")
	fs.DurationVar(&cfg.AssignGrace, "assign-grace", def.AssignGrace, "how long an instance the kubelet allocated stays in use before PodResources must list it")
	fs.StringVar(&cfg.HookPath, "hook", "", "host path of migpro-hook to put in every CDI spec (empty: no telemetry hook)")
	fs.StringVar(&cfg.ShimPath, "shim", "", "host path of libmigpro-shim.so")
	fs.StringVar(&cfg.HookLog, "hook-log", "", "host file where migpro-hook also appends its log lines (runtimes drop a successful hook's stderr, so a fail-open line is otherwise lost); empty: stderr only")
	fs.StringVar(&cfg.TelemetryDir, "telemetry-dir", def.TelemetryDir, "directory of per-container telemetry sockets; \"off\" disables telemetry and prediction")
	fs.DurationVar(&cfg.PollEvery, "poll-every", def.PollEvery, "period of NVML memory polling per container")
	fs.StringVar(&cfg.CapsDir, "nvidia-capabilities-dir", def.CapsDir, "where the host's /proc/driver/nvidia/capabilities is readable")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", agent.DefaultMetricsAddr, "address of /metrics, /healthz and /readyz; empty disables")
	fs.StringVar(&cfg.ReadmitMode, "readmit-mode", string(readmit.DefaultMode), "what a predicted OOM does: off, advise (Event, annotation, recommendation, metric; no eviction) or evict (move the pod to the recommended profile)")
	fs.BoolVar(&cfg.ReadmitModeLabels, "readmit-mode-labels", false, "let the label migpro.dev/readmit-mode=advise|evict on a pod or its namespace choose for it (not while --readmit-mode=off)")
	fs.DurationVar(&cfg.ReadmitRestart, "readmit-restart", readmit.DefaultRestart, "how long a workload needs to restart on a larger instance, when its pod does not say (annotation migpro.dev/restart-seconds); with the pod's grace period, the time an eviction needs")
	fs.BoolVar(&cfg.CleanupOnExit, "cleanup-on-exit", false, "on exit, destroy idle instances and remove migpro CDI specs (uninstall); in-use instances are left and reported")
	draOn := fs.Bool("dra", false, "also serve the MIG instances as a DRA driver (resource.k8s.io/v1, driver migpro.dev) next to the device plugins; needs the API server (--kubeconfig or in-cluster)")
	draRoot := fs.String("dra-kubelet-dir", "/var/lib/kubelet", "with --dra, the kubelet's root directory (holds plugins_registry/ and plugins/)")
	var view nodeview.ClientConfig
	fs.StringVar(&view.URL, "node-view", "", "URL of the node view (migpro-admission's Service, https://...): the agent then reads pods, ReplicaSets, Jobs and Namespaces there, never from the API server (docs/security.md); empty: from the API server")
	fs.StringVar(&view.CAFile, "node-view-ca", "", "with --node-view, PEM CA of the view's serving certificate")
	fs.StringVar(&view.ServerName, "node-view-server-name", "", "with --node-view, the name its certificate is checked against (default: the URL's host)")
	fs.StringVar(&view.TokenFile, "node-view-token", nodeview.DefaultTokenFile, "with --node-view, the agent's ServiceAccount token for audience "+nodeview.Audience+" (a projected token, re-read as it rotates)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	format := fs.String("log-format", "text", "log format: text or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := cli.NewLogger(*level, *format)
	if err != nil {
		return err
	}
	klogrus.Route(log)
	// Bad values fail here, before anything is installed or opened.
	if _, err := partitioner.PolicyByName(cfg.Policy); err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	if cfg.Simulate != "" {
		if cfg.SimDriver, err = resolveSimDriver(*simDriver); err != nil {
			return err
		}
	}
	if *counted != "" {
		cfg.Counted = strings.Split(*counted, ",")
	}
	if cfg.WarmPool, err = agent.ParseWarmPool(*warm); err != nil {
		return fmt.Errorf("--warm-pool: %w", err)
	}
	if _, err := readmit.ParseMode(cfg.ReadmitMode); err != nil {
		return fmt.Errorf("--readmit-mode: %w", err)
	}
	link := kube.New(kube.WithNodeView(view))
	if *draOn {
		link = dra.Link(kube.New(kube.WithDRA(), kube.WithNodeView(view)), dra.WithKubeletRoot(*draRoot))
	}
	opts := []agent.Option{agent.WithLogger(log), agent.WithCluster(link)}
	if *podRes != "" {
		pr, err := podresources.New(podresources.WithSocket(*podRes), podresources.WithResourcePrefix(cfg.Domain+"/mig-"))
		if err != nil {
			return err
		}
		defer pr.Close()
		opts = append(opts, agent.WithAssignments(pr))
	}
	g, err := gpunode.Open(cfg, log)
	if err != nil {
		return err
	}
	defer g.Close()
	a, err := agent.New(cfg, g, opts...)
	if err != nil {
		return err
	}
	// Run recovers the node's state before it serves, and stops when ctx
	// (a signal) ends.
	return a.Run(ctx)
}

// parseFlags parses the double-dash flags; --help and --version print to
// stdout and end the agent (errExit).
func parseFlags(fs *pflag.FlagSet, args []string) error {
	version := fs.Bool("version", false, "print the version and exit")
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprintf(stdout, "Usage: migpro-agent [flags]\n\nThe migpro node agent: creates MIG instances on demand, writes their CDI specs, serves the\nkubelet's device plugins and the local API (migctl). docs/agent.md explains every flag.\n\nFlags:\n%s", fs.FlagUsages())
		return errExit
	case err != nil:
		for _, a := range args {
			if len(a) > 2 && a[0] == '-' && a[1] != '-' {
				return usageError{fmt.Errorf("%w; flags take two dashes: -%s", err, a)}
			}
		}
		return usageError{err}
	case fs.NArg() > 0:
		return usageError{fmt.Errorf("unexpected argument %q (flags are written --name=value)", fs.Arg(0))}
	case *version:
		fmt.Fprintln(stdout, buildinfo.Read().Line("migpro-agent"))
		return errExit
	}
	return nil
}

// defaultNodeName is $NODE_NAME (set from the downward API in the
// DaemonSet), else the hostname, which is what the kubelet registers by
// default.
func defaultNodeName() string {
	if n := os.Getenv("NODE_NAME"); n != "" {
		return n
	}
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.ToLower(h)
}

// simDriverAuto as --sim-driver looks for the stubs next to the agent:
// `make build` puts them in bin/simdriver beside bin/migpro-agent, the
// agent image in /usr/local/lib/migpro/simdriver beside
// /usr/local/bin/migpro-agent.
const simDriverAuto = "auto"

// simDriverCandidates are the directories simDriverAuto searches, in order.
func simDriverCandidates() []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	dir := filepath.Dir(exe)
	return []string{filepath.Join(dir, "simdriver"), filepath.Join(dir, "..", "lib", "migpro", "simdriver")}
}

// resolveSimDriver turns --sim-driver into Config.SimDriver: "off" is
// empty; "auto" is the first candidate holding every stub, or empty; a
// directory must hold every stub.
func resolveSimDriver(v string) (string, error) {
	switch v {
	case "off", "":
		return "", nil
	case simDriverAuto:
		for _, d := range simDriverCandidates() {
			if hasStubs(d) == nil {
				return filepath.Clean(d), nil
			}
		}
		return "", nil
	}
	if err := hasStubs(v); err != nil {
		return "", fmt.Errorf("--sim-driver: %w", err)
	}
	return v, nil
}

func hasStubs(dir string) error {
	for _, f := range simgpu.StubFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("simulated driver stub %s: %w (--sim-driver names the directory of the stubs; --sim-driver=off runs without them)", f, err)
		}
	}
	return nil
}
