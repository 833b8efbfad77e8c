package record_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/migpro/migpro/gpu/simgpu/simdrivertest"
	"github.com/migpro/migpro/hook/shimtest"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/predictor/trace"
	"github.com/migpro/migpro/record"
)

type built struct {
	shim  string
	stubs simdrivertest.Stubs
}

var (
	buildOnce sync.Once
	artifacts built
	buildErr  error
)

// build compiles the shim and the simulated driver's stubs once per run.
func build(t *testing.T) built {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "record-test-")
		if err != nil {
			buildErr = err
			return
		}
		a, err := shimtest.Build(filepath.Join(dir, "shim"))
		if err != nil {
			buildErr = err
			return
		}
		s, err := simdrivertest.Build(filepath.Join(dir, "stubs"))
		artifacts, buildErr = built{shim: a.Shim, stubs: s}, err
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return artifacts
}

func simulate(t *testing.T, profile string) *record.Sim {
	t.Helper()
	b := build(t)
	s, err := record.Simulate("a100-40gb", profile, b.stubs.Dir, quietlog.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestRecordsExactShimSeriesOnSimulatedGPU(t *testing.T) {
	b := build(t)
	s := simulate(t, "")
	var out bytes.Buffer
	res, err := record.Run(record.Config{
		Command:  []string{b.stubs.CudaProg, "init", "ctx", "alloc:1048576", "alloc:4194304", "free:4", "alloc:2097152"},
		ExtraEnv: s.Env, Shim: b.shim, NVML: s.Source(), Stdout: &out, Stderr: &out, Log: quietlog.New(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, output:\n%s", res.ExitCode, out.String())
	}
	if !strings.Contains(out.String(), "alloc:1048576 0") {
		t.Fatalf("command output not passed through:\n%s", out.String())
	}
	if res.Empty() {
		t.Fatal("recording is empty")
	}
	var shimRows []record.Row
	for _, r := range res.Rows {
		if r.Source == "shim" {
			shimRows = append(shimRows, r)
		}
	}
	if len(shimRows) == 0 {
		t.Fatalf("no shim rows in %+v", res.Rows)
	}
	last := shimRows[len(shimRows)-1]
	// The exit sample holds what was live: 1 MiB + 2 MiB; 3 allocations,
	// 1 free; the peak was 5 MiB.
	if last.ShimBytes != 3<<20 || last.Allocs != 3 || last.Frees != 1 || last.ShimPeak != 5<<20 {
		t.Fatalf("last shim row %+v, want 3 MiB live, 3 allocs, 1 free, 5 MiB peak", last)
	}
	var buf bytes.Buffer
	if err := record.WriteTrace(&buf, "t", []string{"a comment"}, res.Rows); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Read(&buf, "recorded")
	if err != nil {
		t.Fatalf("trace does not read back: %v", err)
	}
	if !tr.HasAllocs || !tr.HasRequested || len(tr.Rows) != len(res.Rows) {
		t.Fatalf("trace %+v", tr)
	}
}

func TestSimulatedInstanceRunsOutOfMemory(t *testing.T) {
	b := build(t)
	s := simulate(t, "1g.5gb")
	var out bytes.Buffer
	res, err := record.Run(record.Config{
		Command:  []string{b.stubs.CudaProg, "init", "ctx", "alloc:4294967296", "alloc:4294967296"},
		ExtraEnv: s.Env, Shim: b.shim, NVML: s.Source(), Stdout: &out, Stderr: &out, Log: quietlog.New(),
	})
	if err != nil {
		t.Fatal(err)
	}
	// CUDA_ERROR_OUT_OF_MEMORY is 2: the second 4 GiB does not fit a 1g.5gb.
	if !strings.Contains(out.String(), "alloc:4294967296 2") {
		t.Fatalf("no OOM on a 1g.5gb:\n%s", out.String())
	}
	if res.Empty() {
		t.Fatal("recording is empty")
	}
}

func TestNoCUDAGivesEmptyRecording(t *testing.T) {
	b := build(t)
	res, err := record.Run(record.Config{Command: []string{"true"}, Shim: b.shim, Log: quietlog.New()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Empty() || res.ExitCode != 0 {
		t.Fatalf("want an empty recording and exit 0, got %+v", res)
	}
	var buf bytes.Buffer
	if err := record.WriteTrace(&buf, "t", nil, res.Rows); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "t,used_bytes,requested_bytes,driver_allocs\n" {
		t.Fatalf("empty trace %q", got)
	}
}

func TestExitStatusAndSignalKept(t *testing.T) {
	b := build(t)
	res, err := record.Run(record.Config{Command: []string{"sh", "-c", "exit 7"}, Shim: b.shim, Log: quietlog.New()})
	if err != nil || res.ExitCode != 7 {
		t.Fatalf("exit 7: got %+v, %v", res, err)
	}
	res, err = record.Run(record.Config{Command: []string{"sh", "-c", "kill -TERM $$"}, Shim: b.shim, Log: quietlog.New()})
	if err != nil || res.ExitCode != 128+15 || res.Signal != syscall.SIGTERM {
		t.Fatalf("SIGTERM: got %+v, %v", res, err)
	}
}

func TestCommandNotFound(t *testing.T) {
	_, err := record.Run(record.Config{Command: []string{"no-such-command-migpro"}, Log: quietlog.New()})
	var se *record.StartError
	if !errors.As(err, &se) || se.Code != record.ExitNotFound {
		t.Fatalf("want a StartError with 127, got %v", err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "notexec")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = record.Run(record.Config{Command: []string{p}, Log: quietlog.New()})
	if !errors.As(err, &se) || se.Code != record.ExitNotExecutable {
		t.Fatalf("want a StartError with 126, got %v", err)
	}
	if _, err := record.Run(record.Config{Log: quietlog.New()}); err == nil {
		t.Fatal("no command: want an error")
	}
}

func TestSimulateRefusesUnknownProfile(t *testing.T) {
	b := build(t)
	_, err := record.Simulate("a100-40gb", "9g.99gb", b.stubs.Dir, quietlog.New())
	if err == nil || !strings.Contains(err.Error(), "1g.5gb") {
		t.Fatalf("want an error listing the profiles, got %v", err)
	}
	if _, err := record.Simulate("a100-40gb:2", "", b.stubs.Dir, quietlog.New()); err == nil {
		t.Fatal("two GPUs: want an error")
	}
}

func TestSignalsSentToRecorderReachTheCommand(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type out struct {
		res record.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := record.Run(record.Config{Command: []string{"sh", "-c", "echo ready; exec sleep 30"},
			ForwardSignals: true, Stdout: w, Log: quietlog.New()})
		done <- out{res, err}
	}()
	buf := make([]byte, 6)
	if _, err := r.Read(buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("read %q: %v", buf, err)
	}
	// The recorder catches SIGTERM while the command runs, so this test
	// process survives it and the command gets it.
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	o := <-done
	w.Close()
	if o.err != nil || o.res.Signal != syscall.SIGTERM || o.res.ExitCode != 143 {
		t.Fatalf("want the command killed by the forwarded SIGTERM, got %+v, %v", o.res, o.err)
	}
}
