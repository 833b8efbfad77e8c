package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/internal/ctl/ctltest"
	"github.com/migpro/migpro/runner"
)

func runAgent(t *testing.T) string { return ctltest.Agent(t, "migctl-run-test.dev/mig", 0) }

// cmdEngine stands in for containerd: a container writes a line and then
// exits with code, or, with code < 0, runs until it is signalled.
type cmdEngine struct {
	code    int
	out     io.Writer
	mu      sync.Mutex
	started []runner.Container
	kills   []syscall.Signal
	exitC   chan runner.Exit
	startC  chan struct{}
}

func (e *cmdEngine) Prepare(context.Context, string) error { return nil }

func (e *cmdEngine) Start(_ context.Context, c runner.Container) (<-chan runner.Exit, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.started = append(e.started, c)
	fmt.Fprintf(e.out, "hello from %s\n", c.ID)
	e.exitC = make(chan runner.Exit, 1)
	if e.code >= 0 {
		e.exitC <- runner.Exit{Code: e.code}
	}
	close(e.startC)
	return e.exitC, nil
}

func (e *cmdEngine) Kill(_ context.Context, _ string, sig syscall.Signal) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.kills = append(e.kills, sig)
	select {
	case e.exitC <- runner.Exit{Code: 128 + int(sig)}:
	default:
	}
	return nil
}

func (e *cmdEngine) Remove(context.Context, string) error { return nil }

// withEngine swaps the engine, stderr and the process exit for the test.
func withEngine(t *testing.T, e *cmdEngine) (stderr *bytes.Buffer, exitCode *int) {
	t.Helper()
	stderr, exitCode = &bytes.Buffer{}, new(int)
	*exitCode = -1
	e.startC = make(chan struct{})
	oldEngine, oldStderr, oldExit := newRunEngine, runStderr, exitProcess
	newRunEngine = func(_ context.Context, _ string, stdout io.Writer, _ ...runner.ContainerdOption) (runner.Engine, func() error, error) {
		e.out = stdout
		return e, func() error { return nil }, nil
	}
	runStderr = stderr
	exitProcess = func(code int) { *exitCode = code }
	t.Cleanup(func() { newRunEngine, runStderr, exitProcess = oldEngine, oldStderr, oldExit })
	return stderr, exitCode
}

func instancesLeft(t *testing.T, sock string) []client.StatusInstance {
	t.Helper()
	st, err := client.New(sock).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Instances
}

func TestRunBadInputExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{nil, "no image given"},
		{[]string{"img"}, "--profile is required"},
		{[]string{"--profile", "1g.5gb", "--max-restarts", "-1", "img"}, "must not be negative"},
		{[]string{"--profile", "1g.5gb", "--poll", "0s", "img"}, "--poll must be positive"},
		{[]string{"--profile", "1g.5gb", "--id", "bad id!", "img"}, `--id "bad id!"`},
		{[]string{"--profile", "1g.5gb", "--env", "NOEQUALS", "img"}, `--env "NOEQUALS": want KEY=VALUE`},
		{[]string{"--profile", "1g.5gb", "--bogus", "img"}, "unknown flag: --bogus"},
	} {
		var out, errb bytes.Buffer
		code := runMain(append([]string{"run"}, tc.args...), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.msg) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("migpro-lab run %v: exit %d, stderr %q; want 2 and one line with %q", tc.args, code, errb.String(), tc.msg)
		}
	}
}

// The container's output is streamed, its exit code is migctl's, and its
// instance is freed.
func TestRunExitCodeOutputAndNoLeak(t *testing.T) {
	sock := runAgent(t)
	e := &cmdEngine{code: 7}
	stderr, exitCode := withEngine(t, e)
	var stdout bytes.Buffer
	code := runMain([]string{"run", "--socket", sock, "--profile", "1g.5gb", "--id", "job1", "--env", "A=b",
		"img:1", "/app/pattern", "alloc:10"}, &stdout, stderr)
	if code != 0 || *exitCode != 7 {
		t.Errorf("runMain %d, exit %d; want the container's 7 (stderr %q)", code, *exitCode, stderr.String())
	}
	if stdout.String() != "hello from job1\n" {
		t.Errorf("stdout %q", stdout.String())
	}
	if len(e.started) != 1 {
		t.Fatalf("started %+v", e.started)
	}
	c := e.started[0]
	if c.ID != "job1" || c.Image != "img:1" || !slices.Equal(c.Args, []string{"/app/pattern", "alloc:10"}) ||
		!slices.Equal(c.Env, []string{"A=b"}) || !strings.HasPrefix(c.Device, "migctl-run-test.dev/mig=") {
		t.Errorf("started %+v", c)
	}
	if !strings.Contains(stderr.String(), "migpro-lab run: started job1 on 1g.5gb") {
		t.Errorf("stderr %q", stderr.String())
	}
	if left := instancesLeft(t, sock); len(left) != 0 {
		t.Errorf("instances left: %+v", left)
	}
}

func TestRunUnknownProfileIsTheAgents400(t *testing.T) {
	sock := runAgent(t)
	stderr, _ := withEngine(t, &cmdEngine{code: 0})
	code := runMain([]string{"run", "--socket", sock, "--profile", "9g.1tb", "img"}, io.Discard, stderr)
	if code != 2 || !strings.Contains(stderr.String(), "9g.1tb: no GPU on this node offers the profile (offered: [") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestRunWithoutAgentFails(t *testing.T) {
	stderr, _ := withEngine(t, &cmdEngine{code: 0})
	code := runMain([]string{"run", "--socket", "/nonexistent/agent.sock", "--profile", "1g.5gb", "img"}, io.Discard, stderr)
	if code != 1 || !strings.Contains(stderr.String(), "no migpro agent at /nonexistent/agent.sock (is it running?") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// SIGTERM to migctl stops the container and frees its instance; migctl
// exits as a process killed by SIGTERM would (143).
func TestRunSIGTERMStopsAndFrees(t *testing.T) {
	sock := runAgent(t)
	e := &cmdEngine{code: -1}
	stderr, exitCode := withEngine(t, e)
	done := make(chan int, 1)
	go func() {
		done <- runMain([]string{"run", "--socket", sock, "--profile", "1g.5gb", "--poll", "10ms", "img"}, io.Discard, stderr)
	}()
	select {
	case <-e.startC: // signal.Notify is in place before the engine starts
	case <-time.After(10 * time.Second):
		t.Fatal("container not started")
	}
	if left := instancesLeft(t, sock); len(left) != 1 {
		t.Fatalf("instances while running: %+v", left)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 || *exitCode != 143 {
			t.Errorf("runMain %d, exit %d; want 143", code, *exitCode)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("migpro-lab run did not stop on SIGTERM")
	}
	e.mu.Lock()
	kills := slices.Clone(e.kills)
	e.mu.Unlock()
	if !slices.Equal(kills, []syscall.Signal{syscall.SIGTERM}) {
		t.Errorf("signals to the container %v, want SIGTERM", kills)
	}
	if left := instancesLeft(t, sock); len(left) != 0 {
		t.Errorf("instances left: %+v", left)
	}
	if !strings.Contains(stderr.String(), "migpro-lab run: stopped on terminated") {
		t.Errorf("stderr %q", stderr.String())
	}
}
