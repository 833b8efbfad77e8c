package cdi

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

// simFixture is a simulated A100 with one 1g instance, its device nodes and
// capability files under a temp root, and a driver root laid out like a
// driver install (the files nvcdi looks for).
type simFixture struct {
	t          testing.TB
	node       *simgpu.Node
	inst       Instance
	devRoot    string // holds dev/
	driverRoot string
	nvml       *versionedNVML
}

// versionedNVML is the simulated NVML with the driver version a test sets,
// as a driver upgrade changes it.
type versionedNVML struct {
	nvml.Interface
	version string
}

func (v *versionedNVML) SystemGetDriverVersion() (string, nvml.Return) {
	return v.version, nvml.SUCCESS
}

func newSimFixture(t testing.TB, version string) *simFixture {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the simulated GPU's device nodes need root")
	}
	root := t.TempDir()
	n, err := simgpu.NewNode("a100-40gb", simgpu.WithRoot(filepath.Join(root, "sim")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if n.NodeKind() != simgpu.NodeCharDevice {
		t.Fatalf("simulated nodes are %v, want char devices", n.NodeKind())
	}
	d := n.Devices()[0]
	gi, err := d.CreateGPUInstance(0, gpu.Placement{Start: 3, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	in, err := d.CreateComputeInstance(gi)
	if err != nil {
		t.Fatal(err)
	}
	f := &simFixture{t: t, node: n, devRoot: filepath.Dir(n.Paths().DevDir), driverRoot: filepath.Join(root, "driver"),
		inst: Instance{UUID: in.UUID, GPUIndex: 0, GPUMinor: d.Minor(), GIID: in.GIID, CIID: in.CIID, Profile: "1g.5gb"},
		nvml: &versionedNVML{Interface: n.Lib(), version: version}}
	f.installDriver(version)
	return f
}

// Files of a driver install, relative to the driver root, for a version.
func driverFiles(version string) (libs []string, others []string) {
	libs = []string{"usr/lib/x86_64-linux-gnu/libcuda.so." + version, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + version}
	others = []string{"usr/bin/nvidia-smi", "lib/firmware/nvidia/" + version + "/gsp_ga10x.bin"}
	return libs, others
}

// installDriver lays out a driver version: the libraries are real shared
// objects with the sonames a driver's have (nvcdi reads them to make the
// .so.1 links), the binary is executable.
func (f *simFixture) installDriver(version string) {
	f.t.Helper()
	libs, others := driverFiles(version)
	for _, l := range libs {
		p := filepath.Join(f.driverRoot, l)
		base := filepath.Base(l)
		soname := base[:strings.Index(base, ".so.")] + ".so.1"
		buildSharedObject(f.t, p, soname)
	}
	for _, o := range others {
		p := filepath.Join(f.driverRoot, o)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			f.t.Fatal(err)
		}
	}
}

// removeDriver deletes a version's files, as a driver upgrade does.
func (f *simFixture) removeDriver(version string) {
	f.t.Helper()
	libs, others := driverFiles(version)
	for _, p := range append(libs, others...) {
		if err := os.Remove(filepath.Join(f.driverRoot, p)); err != nil {
			f.t.Fatal(err)
		}
	}
}

func buildSharedObject(t testing.TB, path, soname string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("cc", "-shared", "-fPIC", "-Wl,-soname,"+soname, "-o", path, "-x", "c", "-")
	cmd.Stdin = strings.NewReader("int migpro_fixture(void) { return 0; }\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", path, err, out)
	}
}

func (f *simFixture) driver(deviceEdits bool) *NVIDIADriver {
	f.t.Helper()
	log := logrus.New()
	log.SetOutput(testWriter{f.t})
	d, err := NewNVIDIADriver(f.nvml, WithDriverLogger(quietlog.New()), WithDriverRoot(f.driverRoot), WithDevRoot(f.devRoot),
		WithHookPath("/opt/test/nvidia-cdi-hook"), WithDeviceEdits(deviceEdits), WithDriverLogger(log))
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func chownMode(path string, gid int, mode os.FileMode) error {
	if err := os.Chown(path, 0, gid); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}
