//go:build e2e

package e2e

// Helpers that run the real migpro-agent and migctl binaries, built from this
// tree once per test process, on a simulated node.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/e2e/harness"
)

// e2eKind is the CDI kind the e2e agents use, so they never touch the specs
// of a real migpro install in /var/run/cdi.
const e2eKind = "migpro-e2e.dev/mig"

var (
	agentBinOnce sync.Once
	agentBinDir  string
	agentBinErr  error
)

// migproBin builds migpro-agent, migctl, migpro-hook and migpro-admission
// from this tree, once per test process, and returns the path of name.
func migproBin(t testing.TB, name string) string {
	t.Helper()
	agentBinOnce.Do(func() {
		agentBinDir, agentBinErr = os.MkdirTemp("", "migpro-e2e-bin-")
		if agentBinErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", agentBinDir+"/", "./cmd/migpro-agent", "./cmd/migctl", "./cmd/migpro-lab", "./cmd/migpro-hook", "./cmd/migpro-admission")
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentBinErr = &agentBuildError{string(out), err}
		}
	})
	if agentBinErr != nil {
		t.Fatalf("build migpro binaries: %v", agentBinErr)
	}
	return filepath.Join(agentBinDir, name)
}

type agentBuildError struct {
	out string
	err error
}

func (b *agentBuildError) Error() string { return b.err.Error() + ": " + b.out }

// agentProc is a running migpro-agent process.
type agentProc struct {
	Dir    string // sim root, state and socket live here; kept across restarts
	Socket string
	args   []string
	cmd    *exec.Cmd
	log    string
	bin    string // the agent binary; empty: the one migproBin builds
}

// startAgent runs migpro-agent on a simulated node with e2e defaults plus
// extra flags, and waits for its local API.
func startAgent(t *testing.T, simulate string, extra ...string) *agentProc {
	t.Helper()
	harness.RequireRoot(t)
	dir, err := os.MkdirTemp("", "migpro-agent-")
	if err != nil {
		t.Fatal(err)
	}
	a := &agentProc{Dir: dir, Socket: filepath.Join(dir, "agent.sock"), log: filepath.Join(dir, "agent.log")}
	a.args = append([]string{
		"--simulate", simulate, "--sim-root", filepath.Join(dir, "sim"), "--state-dir", filepath.Join(dir, "state"),
		"--socket", a.Socket, "--cdi-dir", "/var/run/cdi", "--cdi-kind", e2eKind, "--telemetry-dir", filepath.Join(dir, "run"),
		"--plugin-dir", "", "--pod-resources", "", "--track-every", "500ms", "--log-level", "debug",
		"--hook-log", filepath.Join(dir, "hook.log"),
	}, extra...)
	t.Cleanup(func() {
		a.stop(t, syscall.SIGTERM)
		harness.KeepLog(t, "agent", a.log) // before the directory goes
		harness.KeepLog(t, "hook", filepath.Join(dir, "hook.log"))
		harness.LogTail(t, "agent", a.log, 30)
		harness.LogTail(t, "hook", filepath.Join(dir, "hook.log"), 10)
		removeE2ESpecs(t)
		os.RemoveAll(dir)
	})
	a.start(t)
	return a
}

func (a *agentProc) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(a.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	exe := a.bin
	if exe == "" {
		exe = migproBin(t, "migpro-agent")
	}
	a.cmd = exec.Command(exe, a.args...)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := client.New(a.Socket)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Status(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent did not come up: %v\n%s", err, a.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop signals the agent and waits for it to exit.
func (a *agentProc) stop(t *testing.T, sig syscall.Signal) {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	a.cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { a.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		a.cmd.Process.Kill()
		<-done
	}
	a.cmd = nil
}

// restart kills the agent with SIGKILL, as a crash would, and starts it again
// with the same flags and state.
func (a *agentProc) crashAndRestart(t *testing.T) {
	t.Helper()
	a.stop(t, syscall.SIGKILL)
	a.start(t)
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (a *agentProc) logTail() string {
	b, _ := os.ReadFile(a.log)
	return tail(string(b), 4000)
}

// migctl runs the migctl binary against this agent.
func (a *agentProc) migctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	full := append([]string{args[0], "--socket", a.Socket}, args[1:]...)
	out, err := exec.Command(migproBin(t, "migctl"), full...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (a *agentProc) mustMigctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := a.migctl(t, args...)
	if err != nil {
		t.Fatalf("migctl %v: %v: %s\nagent log:\n%s", args, err, out, a.logTail())
	}
	return out
}

func (a *agentProc) status(t *testing.T) client.Status {
	t.Helper()
	var st client.Status
	if err := json.Unmarshal([]byte(a.mustMigctl(t, "status", "--output", "json")), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// removeE2ESpecs deletes specs of the e2e kind left by a killed agent.
func removeE2ESpecs(t *testing.T) {
	m, _ := filepath.Glob("/var/run/cdi/migpro-e2e.dev-mig*")
	for _, f := range m {
		os.Remove(f)
	}
}

func specExists(uuid string) bool {
	m, _ := filepath.Glob("/var/run/cdi/migpro-e2e.dev-mig*" + uuid + "*")
	return len(m) > 0
}
