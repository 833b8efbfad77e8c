//go:build e2e

package e2e

// The OCI hook and the telemetry shim under real podman + runc: a
// dynamically linked program allocating through a stub libcuda on a
// scripted pattern, with the real telemetry Service in this process as the
// agent. See docs/hook.md.

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/cdi"
	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/hook"
	"github.com/migpro/migpro/hook/shimtest"
	"github.com/migpro/migpro/telemetry"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

var patternSteps = strings.Fields("alloc:1048576 alloc:4194304 create:2097152 pitch:1000:100 free:0 async:524288 " +
	"pool:65536 managed:8192 free:5 threads:2:500:4096 sleep:200 info")

// The whole path: CDI spec → podman → runc runs the hook (createRuntime) →
// registration, socket mount → shim in the container via the spec's
// LD_PRELOAD → the agent's series and migctl top match the pattern →
// poststop deregisters.
func TestHookPodmanCDI(t *testing.T) {
	e := newHookEnv(t)
	pm := harness.Podman(t)
	dev := e.writeSpec(t, "")
	rootfs := e.rootfs(t)
	steps := append(append([]string{}, patternSteps...), "sleep:4000")
	want, err := shimtest.Expect(steps)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan harness.Result, 1)
	go func() {
		done <- pm.RunRootfs(t, rootfs, harness.DeviceFlags(dev), append([]string{"/app/pattern"}, steps...)...)
	}()

	// While the container sleeps after its last call, migctl top shows it.
	var seen telemetryapi.TopEntry
	deadline := time.Now().Add(60 * time.Second)
	for seen.ID == "" {
		select {
		case r := <-done:
			t.Fatalf("container ended before top saw it: %+v; series for %v; stats %+v; hook log %q", r, e.ids(), e.svc.Stats(), readFile(e.logFile))
		default:
		}
		for _, c := range e.top(t).Containers {
			if c.Allocs == want.Allocs && c.ShimBytes == want.Current {
				seen = c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("migctl top never showed the pattern's totals; last %+v", e.top(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(seen.ID) || len(seen.MIGUUIDs) != 1 || seen.MIGUUIDs[0] != hookMIG ||
		seen.PeakBytes != want.Peak || seen.Frees != want.Frees || seen.CapacityBytes != 20<<30 || seen.Processes != 1 || seen.PodName != "" {
		t.Errorf("migctl top entry %+v; want peak %d, frees %d, capacity 20GiB", seen, want.Peak, want.Frees)
	}
	(<-done).Must(t)
	checkSeries(t, e.series(seen.ID), want)
	var nvml int
	for _, s := range e.series(seen.ID) {
		if s.Source == telemetry.SourceNVML {
			nvml++
		}
	}
	if nvml == 0 {
		t.Error("no nvml samples while the container ran")
	}
	waitGone(t, e, seen.ID)
}

// Hosts without CDI: the shipped hooks.d file (paths adjusted to this
// build), the hook mounting the shim itself, LD_PRELOAD from the user.
func TestHookPodmanHooksDir(t *testing.T) {
	e := newHookEnv(t)
	pm := harness.Podman(t)
	hooksDir, logFile := e.hooksDir(t)
	want, err := shimtest.Expect(patternSteps)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--hooks-dir", hooksDir, "run", "--rm", "--network", "none",
		"--env", "NVIDIA_VISIBLE_DEVICES=" + hookMIG, "--env", "LD_PRELOAD=" + hook.ContainerShim,
		// Reach the driver the way the CUDA runtime does: dlopen + cuGetProcAddress.
		"--env", "PATTERN_VIA=procaddress",
		"--rootfs", e.rootfs(t), "/app/pattern"}
	pm.Run(t, append(args, patternSteps...)...).Must(t)
	ids := e.ids()
	if len(ids) != 1 {
		t.Fatalf("series for %v, want one container", ids)
	}
	checkSeries(t, e.series(ids[0]), want)
	waitGone(t, e, ids[0])
	if b, _ := os.ReadFile(logFile); len(b) != 0 {
		t.Errorf("hook logged on a clean run: %s", b)
	}
}

// A rootfs with /run/migpro -> /etc: the hook refuses with a clear error,
// the container does not start, nothing outside the rootfs changes, and the
// agent keeps no registration.
func TestHookPodmanHostileSymlink(t *testing.T) {
	e := newHookEnv(t)
	pm := harness.Podman(t)
	dev := e.writeSpec(t, "")
	rootfs := e.rootfs(t)
	if err := os.MkdirAll(filepath.Join(rootfs, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(rootfs, "run", "migpro")); err != nil {
		t.Fatal(err)
	}
	etcBefore, mountsBefore := listing(t, "/etc"), mountPoints(t)
	r := pm.RunRootfs(t, rootfs, harness.DeviceFlags(dev), "/app/pattern", "alloc:1")
	if r.ExitCode == 0 {
		t.Fatalf("container with a hostile rootfs started: %+v", r)
	}
	if !strings.Contains(r.Combined(), "unsafe container rootfs") || !strings.Contains(r.Combined(), "/etc") {
		t.Errorf("error does not explain the refusal:\n%s", r.Combined())
	}
	if after := listing(t, "/etc"); after != etcBefore {
		t.Errorf("host /etc changed:\nbefore\n%s\nafter\n%s", etcBefore, after)
	}
	for m := range mountPoints(t) {
		if !mountsBefore[m] && (strings.HasPrefix(m, "/etc") || strings.HasPrefix(m, "/run/migpro")) {
			t.Errorf("new host mount %s", m)
		}
	}
	if top := e.top(t); len(top.Containers) != 0 {
		t.Errorf("registration left behind: %+v", top)
	}
	if target, err := os.Readlink(filepath.Join(rootfs, "run", "migpro")); err != nil || target != "/etc" {
		t.Errorf("the rootfs's own symlink changed: %q %v", target, err)
	}
}

// One container floods its socket with garbage at full speed; the agent
// stays responsive and another container's series stays exact.
func TestHookPodmanFloodIsolation(t *testing.T) {
	e := newHookEnv(t)
	pm := harness.Podman(t)
	dev := e.writeSpec(t, "")
	flood := make(chan harness.Result, 1)
	go func() { flood <- pm.RunRootfs(t, e.rootfs(t), harness.DeviceFlags(dev), "/app/flood", "8000") }()
	deadline := time.Now().Add(60 * time.Second)
	for st := e.svc.Stats(); st.Malformed+st.Oversized < 10000; st = e.svc.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("flood never reached the agent: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The agent answers promptly during the flood.
	var worst time.Duration
	stopProbe := make(chan struct{})
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", e.sock)
			},
		}}
		for {
			select {
			case <-stopProbe:
				return
			default:
			}
			start := time.Now()
			resp, err := c.Get("http://agent/v1/top")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if d := time.Since(start); d > worst || err != nil {
				worst = max(d, worst)
				if err != nil {
					worst = time.Hour
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	want, err := shimtest.Expect(patternSteps)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, id := range e.ids() {
		before[id] = true
	}
	pm.RunRootfs(t, e.rootfs(t), harness.DeviceFlags(dev), append([]string{"/app/pattern"}, patternSteps...)...).Must(t)
	close(stopProbe)
	<-probeDone
	r := <-flood
	r.Must(t)
	var good []string
	for _, id := range e.ids() {
		for _, s := range e.series(id) {
			if s.Source == telemetry.SourceShim && !before[id] {
				good = append(good, id)
				break
			}
		}
	}
	if len(good) != 1 {
		t.Fatalf("containers with shim series: %v, want exactly the well-behaved one", good)
	}
	checkSeries(t, e.series(good[0]), want)
	st := e.svc.Stats()
	t.Logf("flooder sent %s datagrams; agent: %+v; worst /v1/top latency %v", strings.TrimSpace(r.Stdout), st, worst)
	if worst > time.Second {
		t.Errorf("agent answered /v1/top in %v during the flood", worst)
	}
}

// The same through containerd: its Go client applies the CDI spec (hooks
// included), runc runs the hook in the overlay-rooted container.
func TestHookContainerdCDI(t *testing.T) {
	e := newHookEnv(t)
	c := harness.StartContainerd(t)
	const ns, image = "migpro-e2e", "migpro-e2e.test/hookpattern:1"
	archive := filepath.Join(t.TempDir(), "pattern.tar")
	if err := harness.WriteOCIArchive(archive, harness.ImageSpec{Name: image, Rootfs: e.rootfs(t), Entrypoint: []string{"/app/pattern"}}); err != nil {
		t.Fatal(err)
	}
	c.ImportArchive(t, ns, archive)
	specDir := t.TempDir()
	harness.ConfigureCDI(t, specDir)
	dev := e.writeSpec(t, specDir)
	want, err := shimtest.Expect(patternSteps)
	if err != nil {
		t.Fatal(err)
	}
	const id = "hook-containerd-1"
	c.RunTask(t, ns, id, image, oci.WithProcessArgs(append([]string{"/app/pattern"}, patternSteps...)...),
		oci.WithEnv([]string{"PATTERN_VIA=dlsym"}), cdi.WithCDIDevices(dev)).Must(t)
	if log := readFile(e.logFile); log != "" {
		t.Errorf("hook log: %s", log)
	}
	checkSeries(t, e.series(id), want)
	waitGone(t, e, id)
}
