package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/migpro/migpro/gpu/simgpu/simdrivertest"
	"github.com/migpro/migpro/hook/shimtest"
	"github.com/migpro/migpro/predictor/trace"
)

var (
	gpuBuildOnce sync.Once
	gpuShim      string
	gpuStubs     simdrivertest.Stubs
	gpuBuildErr  error
)

// gpuArtifacts builds the shim and the simulated driver's stubs once.
func gpuArtifacts(t *testing.T) (shim string, stubs simdrivertest.Stubs) {
	t.Helper()
	gpuBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "migctl-record-test-")
		if err != nil {
			gpuBuildErr = err
			return
		}
		a, err := shimtest.Build(filepath.Join(dir, "shim"))
		if err != nil {
			gpuBuildErr = err
			return
		}
		gpuShim = a.Shim
		gpuStubs, gpuBuildErr = simdrivertest.Build(filepath.Join(dir, "stubs"))
	})
	if gpuBuildErr != nil {
		t.Fatal(gpuBuildErr)
	}
	return gpuShim, gpuStubs
}

func TestRecordOnSimulatedGPUThroughCLI(t *testing.T) {
	shim, stubs := gpuArtifacts(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run.csv")
	samples := filepath.Join(dir, "samples.csv")
	hist := filepath.Join(dir, "history.json")
	stdout, stderr, code := migctl("record", "--simulate", "a100-40gb", "--profile", "1g.5gb", "--shim", shim, "--sim-driver", stubs.Dir,
		"--output", out, "--samples", samples, "--history", hist, "--key", "prog",
		"--", stubs.CudaProg, "init", "ctx", "alloc:1048576", "alloc:4194304", "free:4", "alloc:2097152")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "alloc:4194304 0") {
		t.Errorf("the command's output is not passed through: %q", stdout)
	}
	if !strings.Contains(stderr, "3 driver allocations, exit 0") || !strings.Contains(stderr, "migctl estimate --gpu MODEL --history") {
		t.Errorf("summary: %q", stderr)
	}
	tr, err := trace.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.HasAllocs || !tr.HasRequested {
		t.Fatalf("trace lacks driver_allocs or requested_bytes: %+v", tr)
	}
	var peakReq uint64
	for _, r := range tr.Rows {
		peakReq = max(peakReq, r.Requested)
	}
	if peakReq != 5<<20 && peakReq != 3<<20 {
		t.Errorf("peak requested %d", peakReq)
	}
	b, err := os.ReadFile(samples)
	if err != nil || !strings.HasPrefix(string(b), "unix,t,source,shim_bytes") {
		t.Fatalf("samples: %v %q", err, b)
	}
	// The recorded peak sizes the workload through estimate's history.
	eo, ee, code := migctl("estimate", "--gpu", "a100-40gb", "--history", hist, "--key", "prog")
	if code != 0 {
		t.Fatalf("estimate from the recorded history: exit %d\n%s%s", code, eo, ee)
	}
	if !strings.Contains(eo, "1g.5gb") {
		t.Errorf("estimate: %s", eo)
	}
	// predict reads the recorded trace.
	po, pe, code := migctl("predict", "--capacity", "5Gi", out)
	if code != 0 {
		t.Fatalf("predict on the recorded trace: exit %d\n%s%s", code, po, pe)
	}
}

func TestRecordKeepsExitCodeAndOutput(t *testing.T) {
	shim, _ := gpuArtifacts(t)
	out := filepath.Join(t.TempDir(), "t.csv")
	stdout, stderr, code := migctl("record", "--shim", shim, "--no-nvml", "-o", out, "--", "sh", "-c", "echo hello; echo oops >&2; exit 3")
	if code != 3 || stdout != "hello\n" || !strings.HasPrefix(stderr, "oops\n") {
		t.Fatalf("code %d stdout %q stderr %q", code, stdout, stderr)
	}
	_, _, code = migctl("record", "--shim", shim, "--no-nvml", "-o", out, "--", "sh", "-c", "kill -KILL $$")
	if code != 128+9 {
		t.Fatalf("SIGKILL: code %d, want 137", code)
	}
}

func TestRecordWithoutCUDAWritesEmptyTrace(t *testing.T) {
	shim, _ := gpuArtifacts(t)
	out := filepath.Join(t.TempDir(), "t.csv")
	_, stderr, code := migctl("record", "--shim", shim, "--no-nvml", "-o", out, "--", "true")
	if code != 0 || !strings.Contains(stderr, "no CUDA allocations seen") {
		t.Fatalf("code %d stderr %q", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.HasSuffix(string(b), "t,used_bytes,requested_bytes,driver_allocs\n") {
		t.Fatalf("empty trace: %v %q", err, b)
	}
}

func TestRecordBadInput(t *testing.T) {
	shim, _ := gpuArtifacts(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing command", []string{"record", "--shim", shim}, 2, "no command given"},
		{"missing command after --", []string{"record", "--shim", shim, "--"}, 2, "no command given"},
		{"unwritable output", []string{"record", "--shim", shim, "-o", "/nonexistent/dir/t.csv", "--", "touch", marker}, 1, "output: open /nonexistent/dir/t.csv"},
		{"output is a directory", []string{"record", "--shim", shim, "-o", dir, "--", "touch", marker}, 1, "output:"},
		{"command not found", []string{"record", "--shim", shim, "-o", filepath.Join(dir, "t.csv"), "--", "no-such-command-migpro"}, 127, `command "no-such-command-migpro" not found`},
		{"shim missing", []string{"record", "--shim", filepath.Join(dir, "none.so"), "-o", filepath.Join(dir, "t.csv"), "--", "true"}, 1, "--shim:"},
		{"unknown model", []string{"record", "--simulate", "z100", "--shim", shim, "--sim-driver", dir, "-o", filepath.Join(dir, "t.csv"), "--", "true"}, 2, "z100"},
		{"profile without simulate", []string{"record", "--profile", "1g.5gb", "--shim", shim, "--", "true"}, 2, "--profile needs --simulate"},
		{"history without key", []string{"record", "--history", filepath.Join(dir, "h"), "--shim", shim, "--", "true"}, 2, "--history and --key"},
	} {
		_, stderr, code := migctl(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: code %d stderr %q; want %d and one line with %q", tc.name, code, stderr, tc.code, tc.msg)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the output could not be written")
	}
}
