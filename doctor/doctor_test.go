package doctor_test

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/doctor"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

// node lays out a host under a temporary root: CDI directories, podman,
// and the given sockets listening.
func node(t *testing.T, sockets ...string) (string, doctor.Options) {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"etc/cdi", "var/run/cdi", "usr/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin/podman"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range sockets {
		p := filepath.Join(root, s)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	return root, doctor.Options{Root: root, AgentSocket: "/run/migpro/agent.sock",
		Run: func(name string, _ ...string) (string, error) { return "podman version 4.3.1\n", nil }}
}

func find(t *testing.T, r doctor.Report, name string) doctor.Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, r.Checks)
	return doctor.Check{}
}

func TestSimulatedNodePasses(t *testing.T) {
	sim, err := simgpu.NewNode("a100-40gb:2", simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	_, o := node(t, "run/migpro/agent.sock", "var/lib/kubelet/device-plugins/kubelet.sock", "var/lib/kubelet/pod-resources/kubelet.sock")
	o.NVML = sim.Lib()
	r := doctor.Run(o)
	if r.Failed() || r.ExitCode() != doctor.ExitOK {
		t.Fatalf("a ready simulated node fails: %+v", r.Checks)
	}
	for _, c := range r.Checks {
		if c.Status != doctor.StatusOK {
			t.Errorf("check %s is %s: %s", c.Name, c.Status, c.Detail)
		}
	}
	if d := find(t, r, "driver").Detail; !strings.Contains(d, simgpu.DriverVersion) || !strings.Contains(d, "CUDA 12.4") {
		t.Errorf("driver check %q", d)
	}
	if d := find(t, r, "gpu 1").Detail; !strings.Contains(d, "MIG mode on, pending on") {
		t.Errorf("gpu check %q", d)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != len(r.Checks) {
		t.Fatalf("%d lines for %d checks:\n%s", n, len(r.Checks), buf.String())
	}
}

func TestMIGOffWarnsWithFixAndChangesNothing(t *testing.T) {
	sim, err := simgpu.NewNode("h100-80gb", simgpu.WithMIGDisabled(), simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	_, o := node(t)
	o.NVML = sim.Lib()
	r := doctor.Run(o)
	c := find(t, r, "gpu 0")
	if c.Status != doctor.StatusWarn || !strings.Contains(c.Fix, "nvidia-smi -i 0 -mig 1") {
		t.Fatalf("MIG off: %+v", c)
	}
	if on, _ := sim.Devices()[0].MIGEnabled(); on {
		t.Fatal("doctor turned MIG on")
	}
	if find(t, r, "agent").Status != doctor.StatusWarn {
		t.Fatal("no agent socket should warn")
	}
	if r.Failed() {
		t.Fatalf("warnings only, yet failed: %+v", r.Checks)
	}
}

func TestMissingNVMLIsOneLineNamingTheLibrary(t *testing.T) {
	_, o := node(t)
	o.NVML = nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1"))
	o.NVMLLibrary = "/nonexistent/libnvidia-ml.so.1"
	r := doctor.Run(o)
	if !r.Failed() || r.ExitCode() != doctor.ExitFailed {
		t.Fatalf("want a failure: %+v", r.Checks)
	}
	var gpuLines []doctor.Check
	for _, c := range r.Checks {
		if c.Name == "nvml" || c.Name == "driver" || strings.HasPrefix(c.Name, "gpu") || c.Name == "mig" {
			gpuLines = append(gpuLines, c)
		}
	}
	if len(gpuLines) != 1 || !strings.Contains(gpuLines[0].Detail, "/nonexistent/libnvidia-ml.so.1 not found") || gpuLines[0].Fix == "" {
		t.Fatalf("want one nvml line naming the library, got %+v", gpuLines)
	}
}

func TestSpecNamingMissingHookFails(t *testing.T) {
	root, o := node(t)
	spec := `{"cdiVersion":"0.5.0","kind":"migpro.dev/mig","devices":[{"name":"d","containerEdits":{"env":["A=1"]}}],
	  "containerEdits":{"hooks":[{"hookName":"createContainer","path":"/usr/bin/nvidia-cdi-hook","args":["nvidia-cdi-hook","update-ldcache"]}]}}`
	if err := os.WriteFile(filepath.Join(root, "var/run/cdi/migpro.dev-mig_d.json"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	sim, err := simgpu.NewNode("a100-40gb", simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	o.NVML = sim.Lib()
	r := doctor.Run(o)
	c := find(t, r, "cdi hooks")
	if c.Status != doctor.StatusFail || !strings.Contains(c.Detail, "/usr/bin/nvidia-cdi-hook") {
		t.Fatalf("missing hook: %+v", c)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin/nvidia-cdi-hook"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if c := find(t, doctor.Run(o), "cdi hooks"); c.Status != doctor.StatusOK {
		t.Fatalf("hook present: %+v", c)
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back doctor.Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Checks) != len(r.Checks) {
		t.Fatalf("json: %v\n%s", err, buf.String())
	}
}

func TestRuntimes(t *testing.T) {
	root, o := node(t)
	if err := os.Remove(filepath.Join(root, "usr/bin/podman")); err != nil {
		t.Fatal(err)
	}
	sim, err := simgpu.NewNode("a100-40gb", simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	o.NVML = sim.Lib()
	if c := find(t, doctor.Run(o), "runtimes"); c.Status != doctor.StatusFail {
		t.Fatalf("no runtime: %+v", c)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin/containerd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.Run = func(string, ...string) (string, error) {
		return "containerd github.com/containerd/containerd v1.7.20 8fc6bcff\n", nil
	}
	c := find(t, doctor.Run(o), "runtimes")
	if c.Status != doctor.StatusFail || !strings.Contains(c.Fix, "enable_cdi = true") {
		t.Fatalf("containerd 1.7 without enable_cdi: %+v", c)
	}
	if err := os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := "[plugins.\"io.containerd.grpc.v1.cri\"]\n  enable_cdi = true\n"
	if err := os.WriteFile(filepath.Join(root, "etc/containerd/config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := find(t, doctor.Run(o), "runtimes"); c.Status != doctor.StatusOK || !strings.Contains(c.Detail, "containerd 1.7.20") {
		t.Fatalf("containerd 1.7 with enable_cdi: %+v", c)
	}
	// A podman too old for CDI beside a containerd that applies them: a
	// warning that names the version needed.
	if err := os.WriteFile(filepath.Join(root, "usr/bin/podman"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.Run = func(name string, _ ...string) (string, error) {
		if filepath.Base(name) == "podman" {
			return "podman version 3.4.4\n", nil
		}
		return "containerd github.com/containerd/containerd v1.7.20 8fc6bcff\n", nil
	}
	if c := find(t, doctor.Run(o), "runtimes"); c.Status != doctor.StatusWarn ||
		!strings.Contains(c.Detail, "podman 3.4.4 (CDI from 4.1)") || c.Fix != "upgrade podman to 4.1 or later" {
		t.Fatalf("podman 3.4: %+v", c)
	}
}
