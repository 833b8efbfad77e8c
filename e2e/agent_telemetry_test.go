//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/cdi"
	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/hook/shimtest"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// agentTop runs `migctl top --output json` against a real agent.
func (a *agentProc) top(t *testing.T) telemetryapi.Top {
	t.Helper()
	var top telemetryapi.Top
	if err := json.Unmarshal([]byte(a.mustMigctl(t, "top", "--output", "json")), &top); err != nil {
		t.Fatal(err)
	}
	return top
}

// waitTopPattern waits until migctl top shows a container on uuid with the
// pattern's totals, while the container sleeps after its last call.
func waitTopPattern(t *testing.T, a *agentProc, uuid string, want shimtest.Expected, done <-chan harness.Result) telemetryapi.TopEntry {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case r := <-done:
			t.Fatalf("container ended before top showed it: %+v\nagent log:\n%s", r, a.logTail())
		default:
		}
		for _, c := range a.top(t).Containers {
			if len(c.MIGUUIDs) == 1 && c.MIGUUIDs[0] == uuid && c.Allocs == want.Allocs && c.ShimBytes == want.Current {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("migctl top never showed the pattern on %s; last %+v\nagent log:\n%s", uuid, a.top(t), a.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func checkTopEntry(t *testing.T, a *agentProc, c telemetryapi.TopEntry, want shimtest.Expected) {
	t.Helper()
	in, ok := instanceByUUID(a.status(t), c.MIGUUIDs[0])
	if !ok {
		t.Fatalf("no instance %s", c.MIGUUIDs[0])
	}
	if c.PeakBytes != want.Peak || c.Frees != want.Frees || c.Processes != 1 {
		t.Errorf("top entry %+v; want peak %d, frees %d, one process", c, want.Peak, want.Frees)
	}
	// Capacity is the instance's memory as NVML reports it (1g.5gb on an
	// A100-40GB: 4864 MiB).
	if in.Profile != "1g.5gb" || c.CapacityBytes != 4864<<20 {
		t.Errorf("capacity %d for a %s, want %d", c.CapacityBytes, in.Profile, uint64(4864<<20))
	}
}

// Issue 4, e2e 1 and 2, the whole path with the real agent: migctl alloc
// gives a CDI device whose spec carries the hook and the shim; the
// container runs with no manual LD_PRELOAD; the agent's series, read with
// migctl top, matches the program's allocation pattern exactly; the poststop
// hook deregisters the container.
func TestAgentTelemetryPodmanAndContainerd(t *testing.T) {
	e := newHookEnv(t) // the shim, the stub libcuda and the pattern program
	a := startAgent(t, "a100-40gb", "--hook", e.hookBin, "--shim", e.art.Shim, "--poll-every", "100ms")
	steps := append(append([]string{}, patternSteps...), "sleep:3000")
	want, err := shimtest.Expect(steps)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("podman", func(t *testing.T) {
		name := a.mustMigctl(t, "alloc", "1g.5gb")
		uuid := strings.TrimPrefix(name, e2eKind+"=")
		pm := harness.Podman(t)
		done := make(chan harness.Result, 1)
		go func() {
			done <- pm.RunRootfs(t, e.rootfs(t), harness.DeviceFlags(name), append([]string{"/app/pattern"}, steps...)...)
		}()
		c := waitTopPattern(t, a, uuid, want, done)
		checkTopEntry(t, a, c, want)
		(<-done).Must(t)
		waitDeregistered(t, a, c.ID)
		a.mustMigctl(t, "free", name)
	})

	t.Run("containerd", func(t *testing.T) {
		name := a.mustMigctl(t, "alloc", "1g.5gb")
		uuid := strings.TrimPrefix(name, e2eKind+"=")
		c := harness.StartContainerd(t)
		const ns, image = "migpro-e2e", "migpro-e2e.test/agentpattern:1"
		archive := filepath.Join(t.TempDir(), "pattern.tar")
		if err := harness.WriteOCIArchive(archive, harness.ImageSpec{Name: image, Rootfs: e.rootfs(t), Entrypoint: []string{"/app/pattern"}}); err != nil {
			t.Fatal(err)
		}
		c.ImportArchive(t, ns, archive)
		harness.ConfigureCDI(t, "/var/run/cdi")
		done := make(chan harness.Result, 1)
		go func() {
			done <- c.RunTask(t, ns, "agent-pattern", image, oci.WithProcessArgs(append([]string{"/app/pattern"}, steps...)...), cdi.WithCDIDevices(name))
		}()
		entry := waitTopPattern(t, a, uuid, want, done)
		checkTopEntry(t, a, entry, want)
		(<-done).Must(t)
		waitDeregistered(t, a, entry.ID)
		a.mustMigctl(t, "free", name)
	})
}

func waitDeregistered(t *testing.T, a *agentProc, id string) {
	t.Helper()
	eventually(t, "poststop deregistration of "+id, 30*time.Second, func() bool {
		for _, c := range a.top(t).Containers {
			if c.ID == id {
				return false
			}
		}
		return true
	})
}
