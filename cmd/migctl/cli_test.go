package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func migctl(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = runMain(args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestHelpVersionAndUsageExitCodes drives runMain, the CLI's entry point.
func TestHelpVersionAndUsageExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		stdoutHas  string
		stderrLine bool
	}{
		{[]string{"status", "--help"}, 0, "-socket", false},
		{[]string{"alloc", "-h"}, 0, "-timeout", false},
		{[]string{"plan", "--help"}, 0, "-simulate", false},
		{[]string{"version"}, 0, "migctl ", false},
		{[]string{"--version"}, 0, "migctl ", false},
		{[]string{"status", "extra-arg"}, 2, "", true},
		{[]string{"status", "--timeout", "-1s"}, 2, "", true},
		{[]string{"alloc", "--timeout", "-1s", "1g.5gb"}, 2, "", true},
		{[]string{"free", "--timeout", "0s", "x"}, 2, "", true},
		{[]string{"status", "--no-such-flag"}, 2, "", true},
		{[]string{"version", "extra"}, 2, "", true},
	} {
		out, errOut, code := migctl(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.stdoutHas) {
			t.Errorf("migctl %q: exit %d, stdout %q; want exit %d with %q", tc.args, code, out, tc.code, tc.stdoutHas)
		}
		if tc.stderrLine && (errOut == "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0) {
			t.Errorf("migctl %q: stderr %q, want one line", tc.args, errOut)
		}
	}
	if _, errOut, _ := migctl("status", "--timeout", "-1s"); strings.Contains(errOut, "is it running") {
		t.Errorf("negative timeout reported as a missing agent: %q", errOut)
	}
}

// TestFreeUnknownInstanceSaysItOnce runs migctl free against a real agent.
func TestFreeUnknownInstanceSaysItOnce(t *testing.T) {
	sock := runAgent(t)
	_, errOut, code := migctl("free", "--socket", sock, "MIG-00000000-0000-0000-0000-000000000000")
	if code == 0 || strings.Count(errOut, "no such instance") != 1 {
		t.Fatalf("free unknown: exit %d, stderr %q; want failure naming 'no such instance' once", code, errOut)
	}
}

// TestPermissionDeniedIsNotNotRunning builds migctl and runs it as uid 65534
// against a live agent whose socket sits in a root-only directory.
func TestPermissionDeniedIsNotNotRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("builds migctl")
	}
	if syscall.Getuid() != 0 {
		t.Skip("needs root to run migctl as another user")
	}
	sock := runAgent(t)
	bin, err := os.MkdirTemp("", "migctl-bin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	if err := os.Chmod(bin, 0o755); err != nil { // nobody must reach the binary, not the socket
		t.Fatal(err)
	}
	exe := filepath.Join(bin, "migctl")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(exe, "status", "--socket", sock)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("status as nobody: %v, stderr %q; want exit 1", err, errb.String())
	}
	msg := errb.String()
	if !strings.Contains(msg, "no permission") || strings.Contains(msg, "is it running") {
		t.Fatalf("stderr %q: want a permission error, not 'is it running?'", msg)
	}
}

// TestSocketFromEnv: MIGPRO_SOCKET is the default of --socket.
func TestSocketFromEnv(t *testing.T) {
	t.Setenv("MIGPRO_SOCKET", "/nonexistent/from-env.sock")
	_, errOut, code := migctl("status")
	if code != 1 || !strings.Contains(errOut, "/nonexistent/from-env.sock") {
		t.Fatalf("exit %d, stderr %q; want the socket from MIGPRO_SOCKET", code, errOut)
	}
}
