package agent

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/predictor"
)

// Config is everything the agent can be told. Zero values of optional parts
// turn them off, so tests switch on only what they exercise.
type Config struct {
	// Simulate runs on simulated GPUs, e.g. "a100-40gb:2,h100-80gb"; empty
	// means real NVML.
	Simulate string
	// Seed makes simulated UUIDs deterministic.
	Seed int64
	// SimRoot holds the simulated GPUs' device nodes and driver state
	// (default <StateDir>/sim).
	SimRoot string
	// SimDriver is a directory of the simulated driver's stubs
	// (simgpu.StubFiles, built by `make simdriver`), installed at start
	// under the driver root (DriverRoot, else SimRoot) for SimDriverVersion,
	// so the specs carry the simulated driver. Empty installs nothing.
	SimDriver string
	// SimDriverVersion is the driver version the simulated NVML reports and
	// the stubs are installed as (default: the simulated GPU's own); changing it
	// between starts plays a driver upgrade.
	SimDriverVersion string

	// CapsDir is where the host's /proc/driver/nvidia/capabilities can be
	// read (a pod mounts it elsewhere, because runtimes refuse mounts under
	// /proc).
	CapsDir string

	// MetricsAddr serves /metrics, /healthz and /readyz over HTTP (e.g.
	// ":9477"); empty turns the endpoint off.
	MetricsAddr string
	// CleanupOnExit destroys every idle instance and removes every migpro
	// CDI spec when Run ends (uninstall); in-use instances stay and are
	// reported.
	CleanupOnExit bool

	// Socket is the local API's unix socket.
	Socket string
	// StateDir holds the checkpoint.
	StateDir string

	// CDISpecDir and CDIKind place and name the per-instance CDI specs.
	CDISpecDir string
	CDIKind    string
	// DriverRoot, DevRoot and NVIDIACDIHookPath locate the NVIDIA driver's
	// files, its device nodes and nvidia-cdi-hook for the specs' driver
	// edits (see docs/cdi.md). Defaults: / (with Simulate, the simulated
	// node's root), the driver root, /usr/bin/nvidia-cdi-hook.
	DriverRoot string
	DevRoot    string
	// HostDriverRoot is the host's path of DriverRoot, written into the
	// specs, when the agent runs in a container that mounts the host's
	// driver root elsewhere (empty: DriverRoot itself).
	HostDriverRoot    string
	NVIDIACDIHookPath string
	// NVIDIACDIHookCheck is where the agent itself sees NVIDIACDIHookPath,
	// to check at start that it exists (empty: NVIDIACDIHookPath; an agent
	// in a container sees the host's file under a mount). When it does not
	// exist, or NVIDIACDIHookPath is "none", the specs leave NVIDIA's hooks
	// out (see ResolveCDIHook).
	NVIDIACDIHookCheck string

	// PluginDir is the kubelet's device-plugin directory; empty turns the
	// device plugins off (podman/containerd-only hosts).
	PluginDir string
	// Domain prefixes resource names: <Domain>/mig-<profile>.
	Domain string
	// Kubeconfig and NodeName turn the cluster demand source on (see
	// cluster.go): an empty Kubeconfig means in-cluster config when
	// KUBERNETES_SERVICE_HOST is set, otherwise off.
	Kubeconfig string
	NodeName   string

	// Policy is the placement policy: migpro (demand-aware, the default),
	// reachability or first-fit (partitioner.PolicyNames).
	Policy string
	// ReserveAfter is how long a local caller told to wait may keep
	// waiting before room is reserved for it (Partitioner.ReserveFor), on
	// nodes of partitioner.MinReserveGPUs GPUs or more; 0, the default,
	// never reserves (docs/replay.md measures why).
	ReserveAfter time.Duration
	// Counted restricts the profiles reachability counts (default all).
	Counted []string
	// Profiles is the admin's allow-list: the only profiles the agent
	// creates and advertises (default: every profile the GPUs offer).
	Profiles []string
	// WarmPool keeps idle instances ready, profile -> count on the node.
	WarmPool map[string]int
	// IdleTimeout destroys instances idle for longer (0: only when their
	// space is needed).
	IdleTimeout time.Duration
	// TrackEvery is the period of use tracking, the warm pool and idle
	// reaping.
	TrackEvery time.Duration
	// AssignGrace protects an instance the kubelet just allocated from being
	// released before PodResources lists it.
	AssignGrace time.Duration

	// Telemetry: where the hook and shim are installed on the host, and the
	// directory of per-container sockets (TelemetryOff turns telemetry and
	// prediction off). An empty HookPath leaves the hook out of the specs.
	HookPath string
	ShimPath string
	// HookLog, when set, is the host file the hook also appends its log
	// lines to.
	HookLog      string
	TelemetryDir string
	// PollEvery is how often each registered container's instance memory
	// is read through NVML (default 1 s: the shim's samples carry the
	// fast changes, and a second keeps the agent cheap with hundreds of
	// containers).
	PollEvery time.Duration
	// Predictor adjusts each container's predictor settings; nil means
	// predictor.ForSeconds (2 s bins, a loading grace). Tests that run a
	// whole ramp in a few seconds shrink the bins with it.
	Predictor func(predictor.Config) predictor.Config
	// ReadmitMode is what readmission does with a mark: off, advise (the
	// default when empty: Event, annotation, recommendation, metric, no
	// eviction) or evict (readmit.Mode). ReadmitModeLabels lets the label
	// migpro.dev/readmit-mode on a pod or its namespace choose advise or
	// evict. ReadmitRestart is how long a workload needs to restart on a
	// larger instance when its pod does not say (migpro.dev/restart-seconds):
	// with the pod's grace period, the time an eviction needs, which the
	// predictor must see the OOM coming within.
	ReadmitMode       string
	ReadmitModeLabels bool
	ReadmitRestart    time.Duration
}

// DefaultCapsDir is where the driver publishes the MIG capability files.
const DefaultCapsDir = "/proc/driver/nvidia/capabilities"

// DefaultMetricsAddr is the standard install's metrics and probe address.
// It is loopback only: metrics and probes say which containers run where
// and how much memory they use, and a host install (systemd) has no reason
// to publish them on every interface. The chart passes --metrics-addr=:PORT,
// since Prometheus and the kubelet's probes reach the pod over its network.
const DefaultMetricsAddr = "127.0.0.1:9477"

// TelemetryOff as TelemetryDir turns telemetry and prediction off.
const TelemetryOff = "off"

// Defaults fills the unset fields with the values of a standard install.
func (c Config) Defaults() Config {
	set := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	set(&c.Socket, defaults.AgentSocket)
	set(&c.StateDir, "/var/lib/migpro")
	set(&c.CDISpecDir, "/var/run/cdi")
	set(&c.CDIKind, defaults.CDIKind)
	set(&c.Domain, defaults.Domain)
	set(&c.Policy, partitioner.DefaultPolicy.Name())
	set(&c.CapsDir, DefaultCapsDir)
	set(&c.TelemetryDir, "/run/migpro")
	if c.SimRoot == "" {
		c.SimRoot = c.StateDir + "/sim"
	}
	if c.TrackEvery == 0 {
		c.TrackEvery = 5 * time.Second
	}
	if c.PollEvery == 0 {
		c.PollEvery = time.Second
	}
	if c.AssignGrace == 0 {
		c.AssignGrace = 30 * time.Second
	}
	return c
}

// ParseWarmPool reads "1g.10gb=1,2g.20gb=2".
func ParseWarmPool(s string) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		prof, n, ok := strings.Cut(strings.TrimSpace(part), "=")
		count, err := strconv.Atoi(n)
		if !ok || prof == "" || err != nil || count < 0 {
			return nil, fmt.Errorf("warm pool entry %q: want PROFILE=COUNT, e.g. 1g.10gb=1", part)
		}
		out[prof] = count
	}
	return out, nil
}
