package harness

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CacheDir is where e2e/setup puts what it builds and writes:
// $MIGPRO_E2E_CACHE, or /var/cache/migpro-e2e.
func CacheDir() string { return envDir("MIGPRO_E2E_CACHE", "/var/cache/migpro-e2e") }

// envDir is the directory the environment variable names, or def.
func envDir(name, def string) string {
	if d := os.Getenv(name); d != "" {
		return d
	}
	return def
}

// Bin returns the path of a binary that e2e/setup built into CacheDir()/bin,
// failing t when it is missing.
func Bin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(CacheDir(), "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("e2e binary %s missing (%v): run `make e2e-deps`", name, err)
	}
	return p
}

// RequireRoot fails t unless the test runs as root, which every real
// container engine here needs.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("e2e tests need root (containers, mknod, cgroups)")
	}
}

// Result is the outcome of one command.
type Result struct {
	Stdout, Stderr string
	// ExitCode is the command's exit status, or -1 if it did not run or was
	// killed by a signal.
	ExitCode int
	// Err is the error from running the command, nil on exit status 0.
	Err error
}

// Must fails t unless the command exited 0, showing its output.
func (r Result) Must(t testing.TB) Result {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("command failed: %v\nstdout:\n%s\nstderr:\n%s", r.Err, r.Stdout, r.Stderr)
	}
	return r
}

// Combined returns stdout followed by stderr.
func (r Result) Combined() string { return r.Stdout + r.Stderr }

// runCmd runs name with args and extra env (on top of os.Environ), bounded by
// timeout, and captures its output.
func runCmd(timeout time.Duration, env []string, name string, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String(), ExitCode: -1}
	var ee *exec.ExitError
	switch {
	case err == nil:
		r.ExitCode = 0
	case errors.As(err, &ee):
		r.ExitCode = ee.ExitCode()
		r.Err = err
	default:
		r.Err = err
	}
	if ctx.Err() != nil {
		r.Err = errors.Join(r.Err, ctx.Err())
	}
	if r.Err != nil {
		r.Err = &cmdError{cmd: name + " " + strings.Join(args, " "), err: r.Err}
	}
	return r
}

type cmdError struct {
	cmd string
	err error
}

func (e *cmdError) Error() string { return e.cmd + ": " + e.err.Error() }
func (e *cmdError) Unwrap() error { return e.err }

// tempDir makes a private directory under /tmp that the caller removes
// itself (t.TempDir would fail the test on leftover mounts).
func tempDir(t testing.TB, prefix string) string {
	t.Helper()
	d, err := os.MkdirTemp("", "migpro-e2e-"+prefix+"-")
	if err != nil {
		t.Fatalf("make temp dir: %v", err)
	}
	return d
}

// tail returns the last n lines of the file at path, for failure reports.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
