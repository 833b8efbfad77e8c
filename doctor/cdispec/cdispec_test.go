package cdispec_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migpro/migpro/doctor/cdispec"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/gpu/simgpu/simdrivertest"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/record"
)

func TestSpecOfSimulatedDriverWritesNoCDIDir(t *testing.T) {
	stubs, err := simdrivertest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sim, err := record.Simulate("a100-40gb", "3g.20gb", stubs.Dir, quietlog.New())
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	paths := sim.Paths()
	before, _ := filepath.Glob("/var/run/cdi/*")
	r, err := cdispec.Make(cdispec.Options{NVML: sim.Lib(), DriverRoot: sim.Root(), DevRoot: filepath.Dir(paths.DevDir), Paths: &paths, Log: quietlog.New()})
	if err != nil {
		t.Fatal(err)
	}
	if r.DriverVersion != simgpu.DriverVersion {
		t.Errorf("driver version %q", r.DriverVersion)
	}
	joined := strings.Join(r.Libraries, " ")
	if !strings.Contains(joined, "libcuda.so."+simgpu.DriverVersion) || !strings.Contains(joined, "libnvidia-ml.so."+simgpu.DriverVersion) {
		t.Errorf("libraries %v", r.Libraries)
	}
	if len(r.Binaries) == 0 || !strings.HasSuffix(r.Binaries[0], "nvidia-smi") {
		t.Errorf("binaries %v", r.Binaries)
	}
	if len(r.Instances) != 1 || r.Instances[0].UUID != sim.Instance.UUID {
		t.Fatalf("instances %+v, notes %v", r.Instances, r.Notes)
	}
	env := strings.Join(r.Instances[0].Spec.Devices[0].ContainerEdits.Env, " ")
	if !strings.Contains(env, "NVIDIA_VISIBLE_DEVICES="+sim.Instance.UUID) {
		t.Errorf("instance env %s", env)
	}
	if len(r.GPUs) != 1 || !r.GPUs[0].MIG || len(r.GPUs[0].Profiles) == 0 || len(r.GPUs[0].InstanceIDs) != 1 || r.GPUs[0].Memory.Total == 0 {
		t.Errorf("adapter's view %+v", r.GPUs)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "instance specs (1)") {
		t.Errorf("text:\n%s", buf.String())
	}
	after, _ := filepath.Glob("/var/run/cdi/*")
	if len(after) != len(before) {
		t.Errorf("/var/run/cdi changed: %v -> %v", before, after)
	}
	if _, err := os.Stat("/etc/cdi"); err == nil {
		t.Log("note: /etc/cdi exists on this host")
	}
}
