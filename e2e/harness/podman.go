package harness

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PodmanRunner runs the Debian podman with the e2e containers.conf (runc and
// explicit ulimits, see docs/e2e.md) through CONTAINERS_CONF.
type PodmanRunner struct {
	// Env is added to the environment of every podman command.
	Env []string
	// Timeout bounds each podman command; default 2 minutes.
	Timeout time.Duration
}

// Podman returns a runner for podman, failing t when `make e2e-deps` has not
// installed it.
func Podman(t testing.TB) *PodmanRunner {
	t.Helper()
	RequireRoot(t)
	conf := filepath.Join(CacheDir(), "containers.conf")
	for _, p := range []string{"/usr/bin/podman", "/usr/sbin/runc", conf} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("podman set-up incomplete (%v): run `make e2e-deps`", err)
		}
	}
	return &PodmanRunner{Env: []string{"CONTAINERS_CONF=" + conf}, Timeout: 2 * time.Minute}
}

// Run runs `podman args...`.
func (p *PodmanRunner) Run(t testing.TB, args ...string) Result {
	t.Helper()
	start := time.Now()
	r := runCmd(p.Timeout, p.Env, "podman", args...)
	t.Logf("podman %v: exit %d in %v", args, r.ExitCode, time.Since(start).Round(time.Millisecond))
	return r
}

// RunRootfs runs cmd in a new container whose root filesystem is the
// directory rootfs (for example from BusyboxRootfs):
//
//	podman run --rm --network none [flags...] --rootfs rootfs cmd...
//
// flags are podman run flags, such as DeviceFlags("vendor/class=name") or
// "--env", "K=V". The container's stdout and stderr come back in the Result;
// a non-zero exit is not a test failure by itself (use Result.Must).
func (p *PodmanRunner) RunRootfs(t testing.TB, rootfs string, flags []string, cmd ...string) Result {
	t.Helper()
	args := append([]string{"run", "--rm", "--network", "none"}, flags...)
	args = append(append(args, "--rootfs", rootfs), cmd...)
	return p.Run(t, args...)
}

// DeviceFlags turns device names (CDI names like "vendor/class=name", or host
// paths) into podman or ctr `--device` flags.
func DeviceFlags(names ...string) []string {
	var f []string
	for _, n := range names {
		f = append(f, "--device", n)
	}
	return f
}
