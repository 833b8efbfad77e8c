package hook

import (
	"strconv"

	cdispecs "tags.cncf.io/container-device-interface/specs-go"
)

// What every MIG instance's CDI spec must carry for telemetry, as plain data
// so the CDI writer (cdi/) copies it in without importing CDI types here.
//
// The split of work, and why:
//   - The engine (podman, containerd, cri-o) applies the CDI mount of the
//     shim and the env. That works everywhere and needs no hook.
//   - The spec does not set LD_PRELOAD: an env edit would replace the
//     image's own (tcmalloc, a profiler), and a spec cannot refer to the
//     image's value. The hook adds the shim to the container's
//     /etc/ld.so.preload instead (ContainerPreload), after the image's own
//     entries, so both load. A container the hook did not set up (agent
//     down, fail-open) runs without the shim, which would have had no one
//     to report to.
//   - The per-container socket cannot be in a per-device spec, so the hook
//     (createRuntime) registers with the agent and mounts the container's
//     own socket directory at ContainerDir.
//   - The poststop hook deregisters.

// Mount is one bind mount for the CDI spec's containerEdits.mounts.
type Mount struct {
	HostPath      string
	ContainerPath string
	Options       []string
}

// Hook is one entry for containerEdits.hooks. Stage is the CDI/OCI hook name
// ("createRuntime", "poststop"); Args includes argv[0].
type Hook struct {
	Path  string
	Args  []string
	Env   []string
	Stage string
}

// Edits is the telemetry part of an instance's CDI spec.
type Edits struct {
	Env    []string
	Mounts []Mount
	Hooks  []Hook
}

// FlagInstance names, in the hook's arguments, an instance the CDI spec
// that runs the hook injects.
const FlagInstance = "--instance"

// Default host paths of the installed parts.
const (
	DefaultHookPath = "/usr/local/bin/migpro-hook"
	DefaultShimPath = "/usr/local/lib/migpro/libmigpro-shim.so"
)

// EditsConfig says where things are installed on the host.
type EditsConfig struct {
	HookPath    string // default DefaultHookPath
	ShimPath    string // default DefaultShimPath
	AgentSocket string // default DefaultAgentSocket
	// FailClosed makes the hook refuse containers whose telemetry cannot be
	// set up.
	FailClosed bool
	// IntervalMs, when non-zero, sets the shim's periodic sample interval.
	IntervalMs int
	// LogFile, when set, is where the hook also appends its log lines
	// (runtimes discard a successful hook's stderr, so a fail-open line
	// would otherwise be lost).
	LogFile string
	// Instance, when set, is the MIG UUID of the instance whose spec these
	// edits go into: the hooks get "--instance UUID", and the hook then
	// registers the container with the instances its specs named, never
	// with one the container names itself (its env or annotations).
	Instance string
}

// CDIEdits returns the env, mounts and hooks for a CDI spec. The hook gets
// an empty environment on purpose: it needs none, and an inherited one is
// how CVE-2025-23266 happened.
func CDIEdits(c EditsConfig) Edits {
	if c.HookPath == "" {
		c.HookPath = DefaultHookPath
	}
	if c.ShimPath == "" {
		c.ShimPath = DefaultShimPath
	}
	if c.AgentSocket == "" {
		c.AgentSocket = DefaultAgentSocket
	}
	args := []string{"migpro-hook", "--agent-socket", c.AgentSocket}
	if c.FailClosed {
		args = append(args, "--fail-closed")
	}
	if c.LogFile != "" {
		args = append(args, "--log-file", c.LogFile)
	}
	if c.Instance != "" {
		args = append(args, FlagInstance, c.Instance)
	}
	env := []string{"MIGPRO_TELEMETRY_SOCKET=" + ContainerSocket}
	if c.IntervalMs > 0 {
		env = append(env, "MIGPRO_TELEMETRY_INTERVAL_MS="+strconv.Itoa(c.IntervalMs))
	}
	return Edits{
		Env: env,
		Mounts: []Mount{{
			HostPath: c.ShimPath, ContainerPath: ContainerShim,
			Options: []string{"ro", "nosuid", "nodev", "bind"},
		}},
		Hooks: []Hook{
			{Path: c.HookPath, Args: append(append([]string{}, args...), StageCreateRuntime), Env: []string{}, Stage: StageCreateRuntime},
			{Path: c.HookPath, Args: append(append([]string{}, args...), StagePoststop), Env: []string{}, Stage: StagePoststop},
		},
	}
}

// ContainerEdits converts e to the CDI spec type, ready for the cdi
// package's WithExtraEdits. (specs-go has no dependencies, so this costs the
// static hook binary nothing.)
func (e Edits) ContainerEdits() cdispecs.ContainerEdits {
	out := cdispecs.ContainerEdits{Env: append([]string(nil), e.Env...)}
	for _, m := range e.Mounts {
		out.Mounts = append(out.Mounts, &cdispecs.Mount{
			HostPath: m.HostPath, ContainerPath: m.ContainerPath, Options: append([]string(nil), m.Options...),
		})
	}
	for _, h := range e.Hooks {
		out.Hooks = append(out.Hooks, &cdispecs.Hook{
			HookName: h.Stage, Path: h.Path, Args: append([]string(nil), h.Args...), Env: append([]string{}, h.Env...),
		})
	}
	return out
}
