package simgpu_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/atomicfile"
	"github.com/migpro/migpro/internal/quietlog"
)

// savedState makes a state file with two complete instances on GPU 0 and
// returns its path and bytes.
func savedState(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sim.json")
	n := openState(t, path, t.TempDir())
	must(t, n.Devices()[0], "3g.20gb", gpu.Placement{Start: 4, Size: 4})
	must(t, n.Devices()[0], "1g.5gb", gpu.Placement{Start: 0, Size: 1})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// edit rewrites a saved state through a generic JSON tree, so a case can
// break one thing the typed decoder alone would accept.
func edit(t *testing.T, data []byte, f func(st map[string]any)) []byte {
	t.Helper()
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	f(st)
	out, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gi0(st map[string]any, i int) map[string]any {
	return st["gpus"].([]any)[0].(map[string]any)["gpuInstances"].([]any)[i].(map[string]any)
}

func TestStateCorruptFileIsAnError(t *testing.T) {
	path, good := savedState(t)
	cases := map[string][]byte{
		"empty":         {},
		"not JSON":      []byte("\x00\x01garbage"),
		"truncated":     good[:len(good)/2],
		"trailing data": append(append([]byte{}, good...), []byte("{}")...),
		"unknown field": edit(t, good, func(st map[string]any) { st["extra"] = 1 }),
		"wrong version": edit(t, good, func(st map[string]any) { st["version"] = 99 }),
		"wrong type":    edit(t, good, func(st map[string]any) { st["gpus"] = "x" }),
		"overlap": edit(t, good, func(st map[string]any) {
			gi0(st, 1)["placement"] = map[string]any{"start": 0, "size": 4}
		}),
		"illegal placement": edit(t, good, func(st map[string]any) {
			gi0(st, 0)["placement"] = map[string]any{"start": 3, "size": 4}
		}),
		"duplicate GI id": edit(t, good, func(st map[string]any) { gi0(st, 1)["id"] = gi0(st, 0)["id"] }),
		"duplicate UUID": edit(t, good, func(st map[string]any) {
			ci := func(i int) map[string]any { return gi0(st, i)["computeInstances"].([]any)[0].(map[string]any) }
			ci(1)["uuid"] = ci(0)["uuid"]
		}),
		"generator behind": edit(t, good, func(st map[string]any) {
			st["gpus"].([]any)[0].(map[string]any)["migUUIDsMade"] = 1
		}),
		"wrapping placement": edit(t, good, func(st map[string]any) {
			gi0(st, 1)["placement"] = map[string]any{"start": 1 << 32, "size": 1}
		}),
		"memory over size": edit(t, good, func(st map[string]any) { gi0(st, 0)["memoryUsedBytes"] = 1 << 50 }),
		"GPU UUID":         edit(t, good, func(st map[string]any) { st["gpus"].([]any)[1].(map[string]any)["uuid"] = "GPU-x" }),
		"processes without CI": edit(t, good, func(st map[string]any) {
			gi0(st, 0)["computeInstances"] = []any{}
			gi0(st, 0)["processes"] = []any{map[string]any{"pid": 1, "memoryUsedBytes": 1}}
		}),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, body, 0o644); err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			if _, err := simgpu.NewNode(stateSpec, simgpu.WithStateFile(path), simgpu.WithRoot(root), simgpu.WithLogger(quietlog.New())); err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("New on a %s file = %v, want an error naming the file", name, err)
			}
			if _, err := simgpu.ReadStateFile(path); err == nil {
				t.Fatalf("ReadStateFile accepted a %s file", name)
			}
			// A refused file publishes nothing under the root.
			if left, _ := filepath.Glob(filepath.Join(root, "proc/driver/nvidia/capabilities/gpu*")); len(left) != 0 {
				t.Fatalf("refused load left capability files: %v", left)
			}
		})
	}
	// The unedited file still loads, so each case failed for its own defect.
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := simgpu.ReadStateFile(path); err != nil {
		t.Fatalf("the good file: %v", err)
	}
}

func TestStateCrashMidSave(t *testing.T) {
	path, good := savedState(t)
	// A save killed before its rename leaves a half-written temp file.
	tmp := filepath.Join(filepath.Dir(path), atomicfile.TempPrefix(path)+"123456.tmp")
	if err := os.WriteFile(tmp, good[:len(good)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	n := openState(t, path, t.TempDir())
	defer n.Close()
	if got, _ := n.DriverInstances(0); len(got) != 2 {
		t.Fatalf("loaded %+v, want the two saved instances", got)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("stray temp file not cleaned: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), atomicfile.TempPrefix(path)+"*")); len(left) != 0 {
		t.Fatalf("temp files after a save: %v", left)
	}
}

// A change the node cannot save is undone and reported: an instance that
// a crash would lose must never be handed out.
func TestStateUnsavableChangeIsUndone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sim.json")
	n := openState(t, path, t.TempDir())
	defer n.Close()
	d := n.Devices()[0]
	kept := must(t, d, "3g.20gb", gpu.Placement{Start: 4, Size: 4})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}

	if _, err := d.CreateGPUInstance(profileID(t, d, "1g.5gb"), gpu.Placement{Start: 0, Size: 1}); err == nil {
		t.Fatal("create succeeded though it could not be saved")
	}
	if err := d.DestroyComputeInstance(kept.GIID); err == nil {
		t.Fatal("destroy succeeded though it could not be saved")
	}
	if err := n.SetInstanceMemoryUsed(0, kept.GIID, 1<<20); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("unsaved memory change: %v, want an error naming %s", err, path)
	}
	if err := n.AddProcess(0, kept.GIID, 7, 1); err == nil {
		t.Fatal("unsaved process start succeeded")
	}
	got, _ := n.DriverInstances(0)
	mem, _ := d.InstanceMemory(kept.GIID)
	procs, _ := d.InstanceProcesses(kept.GIID)
	if len(got) != 1 || got[0] != kept || mem.Used != 0 || len(procs) != 0 {
		t.Fatalf("after refused changes: %+v, memory %+v, processes %+v; want only %+v, untouched", got, mem, procs, kept)
	}

	// Once saving works again the generator has not moved: the refused
	// creates consumed no UUID.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	next := must(t, d, "1g.5gb", gpu.Placement{Start: 0, Size: 1})
	ref, err := simgpu.NewNode(stateSpec, simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	must(t, ref.Devices()[0], "3g.20gb", gpu.Placement{Start: 4, Size: 4})
	if want := must(t, ref.Devices()[0], "1g.5gb", gpu.Placement{Start: 0, Size: 1}); next != want {
		t.Fatalf("next instance %+v, want %+v", next, want)
	}
}

const lockHelperEnv = "MIGPRO_SIM_LOCK_HELPER"

// TestStateLockHelper is the other process in TestStateOneWriterProcess.
func TestStateLockHelper(t *testing.T) {
	path := os.Getenv(lockHelperEnv)
	if path == "" {
		t.Skip("helper process only")
	}
	if _, err := simgpu.ReadStateFile(path); err != nil {
		t.Fatalf("reader in another process: %v", err)
	}
	_, err := simgpu.NewNode(stateSpec, simgpu.WithStateFile(path), simgpu.WithLogger(quietlog.New()))
	if err == nil {
		t.Fatal("a second process opened the state file for writing")
	}
	if !strings.Contains(err.Error(), "in use by process") {
		t.Fatalf("error %q does not say which process holds the file", err)
	}
}

func TestStateOneWriterProcess(t *testing.T) {
	path, _ := savedState(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStateLockHelper$", "-test.v")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+path)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestStateLockHelper") {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
}
