package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/migpro/migpro/hook"
	"github.com/migpro/migpro/telemetry/telemetrytest"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// hookBinary builds the command the way the root Makefile does (cgo on),
// which is the worst case for static linking.
func hookBinary(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hookbin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "migpro-hook")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		tb.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func TestBinaryIsStatic(t *testing.T) {
	f, err := elf.Open(hookBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("migpro-hook has a dynamic loader (PT_INTERP): a container's LD_PRELOAD could run in it")
		}
	}
}

// The CVE-2025-23266 class: a hostile LD_PRELOAD in the hook's environment
// must not run. The control run proves the library does run where a loader
// exists.
func TestLDPreloadCannotReachHook(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	src := filepath.Join(dir, "evil.c")
	os.WriteFile(src, []byte(`#include <stdio.h>
__attribute__((constructor)) static void evil(void) { FILE *f = fopen("`+marker+`", "w"); if (f) fclose(f); }`), 0o644)
	so := filepath.Join(dir, "evil.so")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", so, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	env := []string{"LD_PRELOAD=" + so, "LD_LIBRARY_PATH=" + dir}
	ctl := exec.Command("/bin/true")
	ctl.Env = env
	if err := ctl.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("control: the preload did not run in /bin/true: %v", err)
	}
	os.Remove(marker)
	h := exec.Command(hookBinary(t), "--agent-socket", filepath.Join(dir, "none"))
	h.Env = env
	h.Stdin = strings.NewReader("{}")
	h.Run() // the input is bad on purpose; only the marker matters
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("LD_PRELOAD code ran inside migpro-hook")
	}
}

func TestExitCodes(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"--bogus"}, strings.NewReader(""), &stderr); code != 2 {
		t.Errorf("bad flag: exit %d", code)
	}
	if code := run([]string{"a", "b"}, strings.NewReader(""), &stderr); code != 2 {
		t.Errorf("two stages: exit %d", code)
	}
	stderr.Reset()
	if code := run(nil, strings.NewReader("not json"), &stderr); code != 1 || !strings.Contains(stderr.String(), "decoding state JSON") {
		t.Errorf("bad state: exit %d, %q", code, stderr.String())
	}
	logf := filepath.Join(t.TempDir(), "hook.log")
	stderr.Reset()
	code := run([]string{"--log-file", logf, "--agent-socket", "/nonexistent.sock"}, strings.NewReader(`{"id":"x","bundle":"/nonexistent","pid":1}`), &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "config.json") {
		t.Errorf("missing bundle: exit %d, %q", code, stderr.String())
	}
	if b, _ := os.ReadFile(logf); !strings.Contains(string(b), "config.json") {
		t.Errorf("log file: %q", b)
	}
	if code := run([]string{"poststop"}, strings.NewReader(`{"id":"x","bundle":"/b","status":"stopped"}`), &stderr); code != 0 {
		t.Errorf("poststop with agent down: exit %d", code)
	}
}

// BenchmarkHookStart measures the hook binary's wall time for one container
// start (exec, parse, register over the socket, join the namespace, mount)
// against the real telemetry Service. Each start gets a fresh mount
// namespace, made outside the timer. Reports the median.
func BenchmarkHookStart(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root for mount namespaces")
	}
	bin := hookBinary(b)
	s, sock := telemetrytest.Serve(b)
	rootfs := b.TempDir()
	bundle := b.TempDir()
	os.WriteFile(filepath.Join(bundle, "config.json"), []byte(`{"root":{"path":"`+rootfs+`"},"process":{"env":["NVIDIA_VISIBLE_DEVICES=MIG-1"]}}`), 0o600)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ctr := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "60")
		if err := ctr.Start(); err != nil {
			b.Fatal(err)
		}
		waitExec(b, ctr.Process.Pid)
		h := exec.Command(bin, "--agent-socket", sock)
		h.Stdin = strings.NewReader(fmt.Sprintf(`{"ociVersion":"1.0.2","id":"c%d","status":"creating","pid":%d,"bundle":%q}`, i, ctr.Process.Pid, bundle))
		b.StartTimer()
		start := time.Now()
		out, err := h.CombinedOutput()
		times = append(times, time.Since(start))
		b.StopTimer()
		ctr.Process.Kill()
		ctr.Wait()
		if err != nil || len(out) != 0 {
			b.Fatalf("hook: %v %s", err, out)
		}
		s.Deregister(fmt.Sprintf("c%d", i))
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median/start")
}

func waitExec(tb testing.TB, pid int) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(comm)) == "sleep" {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("container stand-in did not start")
		}
		time.Sleep(time.Millisecond)
	}
}

// The shipped hooks.d file must name the installed hook, run at prestart and
// poststop, and pass only flags the hook accepts.
func TestHooksDFile(t *testing.T) {
	b, err := os.ReadFile("../../deploy/hooks.d/migpro.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Version string `json:"version"`
		Hook    struct {
			Path string   `json:"path"`
			Args []string `json:"args"`
		} `json:"hook"`
		When   map[string]any `json:"when"`
		Stages []string       `json:"stages"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Version != "1.0.0" || f.Hook.Path != hook.DefaultHookPath || len(f.Hook.Args) < 2 || f.When["always"] != true ||
		strings.Join(f.Stages, ",") != "prestart,poststop" {
		t.Fatalf("hooks.d file %+v", f)
	}
	// The flags must parse; with the agent down the hook fails open, exit 0.
	var stderr bytes.Buffer
	args := append(append([]string{}, f.Hook.Args[1:]...), "poststop")
	for i, a := range args {
		if a == "/var/log/migpro-hook.log" {
			args[i] = filepath.Join(t.TempDir(), "log")
		}
	}
	if code := run(args, strings.NewReader(`{"id":"x","bundle":"/b","status":"stopped"}`), &stderr); code != 0 {
		t.Fatalf("hooks.d args rejected: exit %d %s", code, stderr.String())
	}
}
