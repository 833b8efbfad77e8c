package gpunode_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/agent/gpunode"
	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/gpu/simgpu/simdrivertest"
	"github.com/migpro/migpro/internal/quietlog"
)

// simulatedAgent runs an agent on a simulated A100 opened by gpunode.Open
// (Config.Simulate, the way migpro-agent --simulate does), with the
// simulated driver's files installed under its root when withDriver is set,
// and allocates a 1g.5gb through the local API. With withHook an executable
// stands for nvidia-cdi-hook; without, the hook path names nothing. It
// returns the instance's spec as a runtime reads it.
func simulatedAgent(t *testing.T, withDriver, withHook bool) (*cdiapi.Spec, agent.Config) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the simulated GPU's device nodes need root")
	}
	dir := t.TempDir()
	cfg := agent.Config{Simulate: "a100-40gb", SimRoot: filepath.Join(dir, "sim"), StateDir: filepath.Join(dir, "state"),
		CDISpecDir: filepath.Join(dir, "cdi"), Socket: filepath.Join(dir, "a.sock"), TelemetryDir: agent.TelemetryOff,
		AssignGrace: time.Nanosecond, NVIDIACDIHookPath: filepath.Join(dir, "toolkit", "nvidia-cdi-hook")}
	if withHook {
		if err := os.MkdirAll(filepath.Dir(cfg.NVIDIACDIHookPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg.NVIDIACDIHookPath, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if withDriver {
		stubs, err := simdrivertest.Build(filepath.Join(dir, "stubs"))
		if err != nil {
			t.Fatal(err)
		}
		if err := simgpu.InstallDriverRoot(cfg.SimRoot, stubs.Dir); err != nil {
			t.Fatal(err)
		}
	}
	g, err := gpunode.Open(cfg, quietlog.New())
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, g, agent.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent run: %v", err)
		}
		g.Close()
	})
	c := client.New(cfg.Socket)
	var resp client.AllocResponse
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if resp, err = c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: "me"}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("alloc: %v", err)
		}
	}
	paths, err := filepath.Glob(filepath.Join(cfg.CDISpecDir, "*.json"))
	if err != nil || len(paths) != 1 {
		t.Fatalf("spec files %v (%v), want the one of %s", paths, err, resp.UUID)
	}
	s, err := cdiapi.ReadSpec(paths[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}

// With the simulated driver installed under the simulated node's root (the
// default driver and dev root with Simulate), the agent's specs carry the
// driver: its libraries and nvidia-smi from that root, the hooks at the
// configured nvidia-cdi-hook path, and the simulated driver's state dir.
func TestSimulatedAgentSpecsCarryTheDriver(t *testing.T) {
	s, cfg := simulatedAgent(t, true, true)
	var targets, hosts []string
	for _, m := range s.ContainerEdits.Mounts {
		targets = append(targets, m.ContainerPath)
		hosts = append(hosts, m.HostPath)
	}
	for _, want := range []string{"/usr/lib/x86_64-linux-gnu/libcuda.so." + simgpu.DriverVersion, "/usr/bin/nvidia-smi"} {
		if !slices.Contains(targets, want) {
			t.Errorf("spec mounts %v lack %s", targets, want)
		}
	}
	for _, h := range hosts {
		if !strings.HasPrefix(h, cfg.SimRoot+"/") {
			t.Errorf("mount from %s, outside the simulated root %s", h, cfg.SimRoot)
		}
	}
	if len(s.ContainerEdits.Hooks) == 0 {
		t.Fatal("spec has no driver hooks")
	}
	for _, h := range s.ContainerEdits.Hooks {
		if h.Path != cfg.NVIDIACDIHookPath {
			t.Errorf("hook %v runs %s, want %s", h.Args, h.Path, cfg.NVIDIACDIHookPath)
		}
	}
	var state bool
	for _, m := range s.Devices[0].ContainerEdits.Mounts {
		state = state || (m.ContainerPath == simgpu.ContainerStateDir && m.HostPath == filepath.Join(cfg.SimRoot, simgpu.StateDirName))
	}
	if !state {
		t.Errorf("device mounts %+v lack the simulated driver's state dir", s.Devices[0].ContainerEdits.Mounts)
	}
	if s.Version != "0.5.0" {
		t.Errorf("cdiVersion %s, want 0.5.0", s.Version)
	}
}

// Without the driver's files the agent still starts, and its specs carry the
// six device nodes and no driver part.
func TestSimulatedAgentWithoutDriverFiles(t *testing.T) {
	s, _ := simulatedAgent(t, false, true)
	if len(s.ContainerEdits.Mounts) != 0 || len(s.ContainerEdits.Hooks) != 0 {
		t.Errorf("spec has driver edits without a driver: %+v", s.ContainerEdits)
	}
	if n := len(s.Devices[0].ContainerEdits.DeviceNodes); n != 6 {
		t.Errorf("spec has %d device nodes, want 6", n)
	}
	for _, m := range s.Devices[0].ContainerEdits.Mounts {
		if m.ContainerPath == simgpu.ContainerStateDir {
			t.Errorf("state dir mounted without the driver")
		}
	}
}

// Without nvidia-cdi-hook on the host the specs still carry the driver but
// leave NVIDIA's hooks out: a spec naming a missing hook would stop every
// container from starting.
func TestMissingCDIHookLeavesHooksOut(t *testing.T) {
	s, cfg := simulatedAgent(t, true, false)
	if len(s.ContainerEdits.Hooks) != 0 {
		t.Fatalf("spec names hooks %+v, but %s does not exist", s.ContainerEdits.Hooks, cfg.NVIDIACDIHookPath)
	}
	var libcuda bool
	for _, m := range s.ContainerEdits.Mounts {
		libcuda = libcuda || strings.Contains(m.ContainerPath, "libcuda.so")
	}
	if !libcuda {
		t.Errorf("spec lost the driver's libraries with the hooks: %+v", s.ContainerEdits.Mounts)
	}
}
