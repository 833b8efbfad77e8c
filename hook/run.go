package hook

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/migpro/migpro/defaults"
)

// Stages the hook understands. CreateRuntime and Prestart do the same work
// (podman's hooks.d offers prestart; CDI specs use createRuntime): both run
// in the runtime's namespace after the container's mounts exist and before
// pivot_root. Poststop deregisters.
const (
	StageCreateRuntime = "createRuntime"
	StagePrestart      = "prestart"
	StagePoststop      = "poststop"
)

// DefaultAgentSocket is the agent's local API.
const DefaultAgentSocket = defaults.AgentSocket

// Config is the hook's own configuration: flags only, never the container's.
type Config struct {
	AgentSocket string
	Timeout     time.Duration
	// FailClosed refuses to start a MIG container whose telemetry cannot be
	// set up. By default the hook fails open: one log line, and the container
	// runs without telemetry (NVML polling still covers it).
	FailClosed bool
	// ShimHostPath, if set, is mounted at ContainerShim (hooks.d without
	// CDI). With CDI the spec mounts the shim.
	ShimHostPath string
	// Stage is one of the Stage constants, or "" to infer it from the
	// state's status ("stopped" means poststop).
	Stage string
	// Instances are the MIG UUIDs the CDI spec that runs this hook injects
	// ("--instance", written by the agent). When set, the container is
	// registered with these (and those the container's other migpro hooks
	// name), never with one its env or annotations name. Empty (hooks.d
	// without CDI): the env names the instances, as the runtime that gives
	// the devices reads it too.
	Instances []string
	// Logf receives the hook's log lines; the runtime keeps its stderr.
	Logf func(format string, args ...any)
}

// Result says what the hook did, for logs and tests.
type Result struct {
	Stage    string
	ID       string
	Skipped  string // why nothing was done, if so
	Injected bool
}

// Run is the whole hook: parse, register, inject (or deregister).
func Run(cfg Config, stdin io.Reader) (Result, error) {
	var res Result
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.AgentSocket == "" {
		cfg.AgentSocket = DefaultAgentSocket
	}
	st, err := ParseState(stdin)
	if err != nil {
		return res, err
	}
	res.ID = st.ID
	res.Stage = cfg.Stage
	if res.Stage == "" {
		res.Stage = StageCreateRuntime
		if st.Status == specs.StateStopped {
			res.Stage = StagePoststop
		}
	}
	// One absolute deadline for everything this run asks the agent.
	client := Client{Socket: cfg.AgentSocket, Timeout: cfg.Timeout, Deadline: time.Now().Add(cfg.Timeout)}
	switch res.Stage {
	case StagePoststop:
		// Never fails the runtime: the agent also drops containers whose
		// pid is gone.
		if err := client.Deregister(st.ID); err != nil {
			cfg.Logf("migpro-hook: container %q: deregistering: %v", st.ID, err)
		}
		return res, nil
	case StageCreateRuntime, StagePrestart:
	default:
		return res, fmt.Errorf("%w: unknown stage %q", ErrBadInput, res.Stage)
	}
	if st.Pid <= 0 {
		return res, fmt.Errorf("%w: state for %s has no pid at %s", ErrBadInput, st.ID, res.Stage)
	}
	bundle, err := LoadBundle(st.Bundle)
	if err != nil {
		return res, err
	}
	reg := Identify(st, bundle)
	if len(cfg.Instances) > 0 {
		reg.MIGUUIDs = cfg.given(st.ID, bundle, reg.MIGUUIDs)
	}
	if len(reg.MIGUUIDs) == 0 {
		res.Skipped = "no MIG device"
		return res, nil
	}
	ep, err := client.Register(reg)
	if err != nil {
		return res, cfg.failOpen(&res, st.ID, err)
	}
	err = Inject(Injection{
		NSPath: "/proc/" + strconv.Itoa(st.Pid) + "/ns/mnt", Rootfs: bundle.Rootfs,
		SocketDir: ep.Dir, ShimHostPath: cfg.ShimHostPath,
	})
	if err != nil {
		// Leave no half-made state at the agent. A container that starts
		// without telemetry is reported as such: the agent ends the
		// registration itself and records an Event on the pod.
		failOpen := !cfg.FailClosed && !errors.Is(err, ErrUnsafeRootfs)
		if !failOpen || client.FailOpen(st.ID, err.Error()) != nil {
			if derr := client.Deregister(st.ID); derr != nil {
				cfg.Logf("migpro-hook: container %q: undoing registration: %v", st.ID, derr)
			}
		}
		if errors.Is(err, ErrUnsafeRootfs) {
			return res, err
		}
		return res, cfg.failOpen(&res, st.ID, err)
	}
	res.Injected = true
	return res, nil
}

func (cfg Config) failOpen(res *Result, id string, err error) error {
	if cfg.FailClosed {
		return fmt.Errorf("container %s: telemetry required (fail-closed): %w", id, err)
	}
	res.Skipped = "fail-open"
	cfg.Logf("migpro-hook: container %q starts without telemetry (fail-open): %v", id, err)
	return nil
}
