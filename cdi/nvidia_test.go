package cdi

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/migpro/migpro/internal/quietlog"
	oci "github.com/opencontainers/runtime-spec/specs-go"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

const testDriverVersion = "570.86.15"

// readSpec reads the spec file Write made for the instance, the way a
// runtime does.
func readSpec(t *testing.T, w *Writer, uuid string) *cdiapi.Spec {
	t.Helper()
	path, err := w.SpecPath(uuid)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cdiapi.ReadSpec(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mountTargets(ms []*specs.Mount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ContainerPath)
	}
	return out
}

func hookCommands(hs []*specs.Hook) []string {
	var out []string
	for _, h := range hs {
		if len(h.Args) > 1 {
			out = append(out, h.Args[1])
		}
	}
	return out
}

func nodePaths(ns []*specs.DeviceNode) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Path)
	}
	return out
}

// TestSpecCarriesTheDriver writes an instance's spec with the driver's edits
// from nvcdi, driven by the simulated NVML, and checks its three parts: the
// driver's common edits at spec level, the instance's device nodes and env,
// and the caller's telemetry edits; then a runtime's CDI cache injects it.
func TestSpecCarriesTheDriver(t *testing.T) {
	f := newSimFixture(t, testDriverVersion)
	extra := specs.ContainerEdits{
		Env:   []string{"LD_PRELOAD=/usr/lib/migpro/libmigshim.so"},
		Hooks: []*specs.Hook{{HookName: "createRuntime", Path: "/usr/bin/migpro-hook", Args: []string{"migpro-hook", "create"}}},
	}
	w := newTestWriter(t, WithDriver(f.driver(false)), WithExtraEdits(extra))
	name, err := w.Write(f.inst, f.node.Paths())
	if err != nil {
		t.Fatal(err)
	}
	s := readSpec(t, w, f.inst.UUID)

	// podman 4.3 reads nothing newer than 0.5.0.
	if s.Version != "0.5.0" {
		t.Errorf("cdiVersion = %q, want 0.5.0", s.Version)
	}
	common := s.ContainerEdits
	lib := "/usr/lib/x86_64-linux-gnu/"
	for _, want := range []string{lib + "libcuda.so." + testDriverVersion, lib + "libnvidia-ml.so." + testDriverVersion,
		"/usr/bin/nvidia-smi", "/lib/firmware/nvidia/" + testDriverVersion + "/gsp_ga10x.bin"} {
		if !slices.Contains(mountTargets(common.Mounts), want) {
			t.Errorf("common mounts %v lack %s", mountTargets(common.Mounts), want)
		}
	}
	for _, m := range common.Mounts {
		if !strings.HasPrefix(m.HostPath, f.driverRoot+"/") {
			t.Errorf("mount %s comes from %s, outside the driver root %s", m.ContainerPath, m.HostPath, f.driverRoot)
		}
	}
	cmds := hookCommands(common.Hooks)
	for _, want := range []string{"create-symlinks", "update-ldcache", "disable-device-node-modification"} {
		if !slices.Contains(cmds, want) {
			t.Errorf("common hooks %v lack %s", cmds, want)
		}
	}
	for _, h := range common.Hooks {
		if h.Path != "/opt/test/nvidia-cdi-hook" || h.HookName != "createContainer" {
			t.Errorf("hook %v: path %s stage %s, want /opt/test/nvidia-cdi-hook createContainer", h.Args, h.Path, h.HookName)
		}
	}
	if got := nodePaths(common.DeviceNodes); !sameSet(got, []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}) {
		t.Errorf("common device nodes = %v", got)
	}
	for _, kv := range common.Env {
		if strings.HasPrefix(kv, EnvNvidiaVisibleDevices+"=") {
			t.Errorf("common env keeps %s", kv)
		}
	}

	dev := s.Devices[0].ContainerEdits
	if got := nodePaths(dev.DeviceNodes); len(got) != 3 || got[0] != "/dev/nvidia0" ||
		!strings.HasPrefix(got[1], "/dev/nvidia-caps/nvidia-cap") || !strings.HasPrefix(got[2], "/dev/nvidia-caps/nvidia-cap") {
		t.Errorf("device nodes = %v, want the GPU node and two capability nodes", got)
	}
	for _, kv := range []string{"NVIDIA_VISIBLE_DEVICES=" + f.inst.UUID, "CUDA_VISIBLE_DEVICES=" + f.inst.UUID, "LD_PRELOAD=/usr/lib/migpro/libmigshim.so"} {
		if !slices.Contains(dev.Env, kv) {
			t.Errorf("device env %v lacks %s", dev.Env, kv)
		}
	}
	if got := hookCommands(dev.Hooks); !slices.Equal(got, []string{"create"}) {
		t.Errorf("device hooks = %v, want migpro's hook only", got)
	}

	// A runtime's cache resolves it and edits an OCI spec with all three.
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(w.Dir()), cdiapi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	oc := &oci.Spec{Process: &oci.Process{Env: []string{"PATH=/bin"}}, Linux: &oci.Linux{}}
	if unresolved, err := cache.InjectDevices(oc, name); err != nil {
		t.Fatalf("inject %s: %v (unresolved %v)", name, err, unresolved)
	}
	if !slices.Contains(oc.Process.Env, "NVIDIA_VISIBLE_DEVICES="+f.inst.UUID) {
		t.Errorf("injected env %v lacks the instance", oc.Process.Env)
	}
	if len(oc.Linux.Devices) != 6 {
		t.Errorf("injected %d device nodes, want 6: %+v", len(oc.Linux.Devices), oc.Linux.Devices)
	}
	if oc.Hooks == nil || len(oc.Hooks.CreateContainer) < 3 || len(oc.Hooks.CreateRuntime) != 1 {
		t.Errorf("injected hooks = %+v", oc.Hooks)
	}
	var libcuda bool
	for _, m := range oc.Mounts {
		libcuda = libcuda || m.Destination == lib+"libcuda.so."+testDriverVersion
	}
	if !libcuda {
		t.Errorf("injected mounts lack libcuda: %+v", oc.Mounts)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// A device node only its group may use would make nvcdi add the group to
// the container (additionalGids, cdiVersion 0.7.0), which podman 4.3 cannot
// read. The driver turns that off, so the spec stays at 0.5.0.
func TestDriverSpecStaysReadableByPodman43(t *testing.T) {
	f := newSimFixture(t, testDriverVersion)
	ctl := filepath.Join(f.devRoot, "dev", "nvidiactl")
	if err := chownMode(ctl, 44, 0o660); err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, WithDriver(f.driver(false)))
	if _, err := w.Write(f.inst, f.node.Paths()); err != nil {
		t.Fatal(err)
	}
	s := readSpec(t, w, f.inst.UUID)
	if s.Version != "0.5.0" || len(s.ContainerEdits.AdditionalGIDs) != 0 || len(s.Devices[0].ContainerEdits.AdditionalGIDs) != 0 {
		t.Fatalf("cdiVersion %s, additionalGids %v / %v; want 0.5.0 and none", s.Version,
			s.ContainerEdits.AdditionalGIDs, s.Devices[0].ContainerEdits.AdditionalGIDs)
	}
	for _, n := range s.ContainerEdits.DeviceNodes {
		if n.Path == "/dev/nvidiactl" && (n.GID == nil || *n.GID != 44) {
			t.Errorf("nvidiactl entry %+v lost its group", n)
		}
	}
}

// A driver upgrade replaces the driver's files. Specs are made again when
// the agent starts (a new Writer); they then name the new files, under the
// same CDI name, so a pod or container holding the instance keeps asking for
// the same device.
func TestSpecRefreshAfterDriverUpgrade(t *testing.T) {
	const newVersion = "580.65.06"
	f := newSimFixture(t, testDriverVersion)
	dir := t.TempDir()
	w, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(dir), WithDriver(f.driver(false)))
	if err != nil {
		t.Fatal(err)
	}
	before, err := w.Write(f.inst, f.node.Paths())
	if err != nil {
		t.Fatal(err)
	}

	f.removeDriver(testDriverVersion)
	f.installDriver(newVersion)
	f.nvml.version = newVersion

	w2, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(dir), WithDriver(f.driver(false)))
	if err != nil {
		t.Fatal(err)
	}
	after, err := w2.Write(f.inst, f.node.Paths())
	if err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Errorf("CDI name changed across the upgrade: %s -> %s", before, after)
	}
	s := readSpec(t, w2, f.inst.UUID)
	targets := mountTargets(s.ContainerEdits.Mounts)
	if !slices.Contains(targets, "/usr/lib/x86_64-linux-gnu/libcuda.so."+newVersion) {
		t.Errorf("refreshed spec mounts %v, want libcuda.so.%s", targets, newVersion)
	}
	for _, m := range targets {
		if strings.Contains(m, testDriverVersion) {
			t.Errorf("refreshed spec still mounts %s", m)
		}
	}
	if got := dirNames(t, dir); len(got) != 1 {
		t.Errorf("spec dir holds %v, want one spec", got)
	}
}

// Without the driver's files under the driver root, the driver cannot be
// used: NewWriter fails naming the version, and writes nothing.
func TestDriverWithoutLibraries(t *testing.T) {
	f := newSimFixture(t, testDriverVersion)
	f.nvml.version = "999.1.2"
	d := f.driver(false)
	dir := t.TempDir()
	_, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(dir), WithDriver(d))
	if err == nil || !strings.Contains(err.Error(), "999.1.2") {
		t.Fatalf("NewWriter with no libraries for the version: %v", err)
	}
	if got := dirNames(t, dir); len(got) != 0 {
		t.Errorf("spec dir holds %v", got)
	}
	if _, err := NewNVIDIADriver(f.nvml, WithDriverLogger(quietlog.New()), WithDriverRoot(filepath.Join(f.driverRoot, "nope"))); err == nil ||
		!strings.Contains(err.Error(), "driver root") {
		t.Errorf("missing driver root: %v", err)
	}
}

// An agent in a container sees the host's driver root at another path: the
// specs must name the host's files, which the container runtime opens.
func TestSpecNamesTheHostDriverRoot(t *testing.T) {
	f := newSimFixture(t, testDriverVersion)
	const hostRoot = "/host/nvidia-driver"
	d, err := NewNVIDIADriver(f.nvml, WithDriverLogger(quietlog.New()), WithDriverRoot(f.driverRoot), WithDevRoot(f.devRoot),
		WithHostDriverRoot(hostRoot), WithHookPath("/opt/test/nvidia-cdi-hook"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := d.CommonEdits()
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Mounts) == 0 {
		t.Fatal("no mounts")
	}
	for _, m := range e.Mounts {
		if !strings.HasPrefix(m.HostPath, hostRoot+"/") || strings.Contains(m.HostPath, f.driverRoot) {
			t.Errorf("mount %s from %s, want it under the host's driver root %s", m.ContainerPath, m.HostPath, hostRoot)
		}
	}
	for _, h := range e.Hooks {
		for _, a := range h.Args {
			if strings.Contains(a, f.driverRoot) {
				t.Errorf("hook %v keeps the agent's view of the driver root %s", h.Args, f.driverRoot)
			}
		}
	}
	same, err := NewNVIDIADriver(f.nvml, WithDriverLogger(quietlog.New()), WithDriverRoot(f.driverRoot), WithDevRoot(f.devRoot), WithHostDriverRoot(f.driverRoot))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := same.CommonEdits(); err != nil || !strings.HasPrefix(e.Mounts[0].HostPath, f.driverRoot+"/") {
		t.Errorf("host root equal to the driver root changed the paths: %v %v", e.Mounts, err)
	}
}
