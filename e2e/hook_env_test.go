//go:build e2e

package e2e

// Shared set-up for the hook e2e tests in hook_test.go: fixtures built once,
// an in-process agent recording every sample, rootfs and CDI spec builders,
// and the checks they share.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cdispecs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/gpu/gputest"
	"github.com/migpro/migpro/hook"
	"github.com/migpro/migpro/hook/shimtest"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/telemetry"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

const (
	hookKind = "migpro-e2e.test/mig"
	hookMIG  = "MIG-5eb1e2e0-0000-4000-8000-000000000001"
)

// hookEnv is what every hook e2e test shares: the fixtures, the binaries,
// and a running agent whose samples are all recorded.
type hookEnv struct {
	art     shimtest.Artifacts
	hookBin string
	migctl  string
	sock    string
	logFile string
	svc     *telemetry.Service

	mu      sync.Mutex
	samples map[string][]telemetry.Sample
}

// fixedMem is the "NVML" side: a fixed instance figure well below the
// shim's bytes, so peaks come from the shim and capacity from here.
var fixedMem = gputest.Memory{hookMIG: {4096, 20 << 30}}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	harness.RequireRoot(t)
	dir, err := os.MkdirTemp("", "mpe2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &hookEnv{samples: map[string][]telemetry.Sample{}}
	shimOnce.Do(func() {
		// Built once per test binary into the git-ignored e2e/.work.
		work, _ := filepath.Abs(filepath.Join(".work", "hook"))
		shimArt, shimErr = shimtest.Build(filepath.Join(work, "art"))
	})
	if shimErr != nil {
		t.Fatal(shimErr)
	}
	e.art, e.hookBin, e.migctl = shimArt, migproBin(t, "migpro-hook"), migproBin(t, "migctl")
	// No pid check: deregistration must come from the poststop hook.
	e.svc, err = telemetry.New(telemetry.WithStateDir(filepath.Join(dir, "state")), telemetry.WithPIDCheck(nil), telemetry.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	e.svc.OnSample(func(id string, s telemetry.Sample) {
		e.mu.Lock()
		e.samples[id] = append(e.samples[id], s)
		e.mu.Unlock()
	})
	e.sock = filepath.Join(dir, "agent.sock")
	l, err := net.Listen("unix", e.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: e.svc.Handler()}
	go srv.Serve(l)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				e.svc.PollOnce(fixedMem)
			}
		}
	}()
	t.Cleanup(func() { close(stop); srv.Close(); e.svc.Close() })
	return e
}

var (
	shimOnce sync.Once
	shimArt  shimtest.Artifacts
	shimErr  error
)

// rootfs makes a root filesystem with the pattern program, the flooder and
// the stub libcuda in /app, plus the host's libc and loader they need.
func (e *hookEnv) rootfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range []string{e.art.Pattern, e.art.Flood, e.art.Stub} {
		copyInto(t, f, filepath.Join(root, "app", filepath.Base(f)))
	}
	for _, lib := range sharedLibs(t, e.art.Pattern, e.art.Flood, e.art.Shim) {
		if !strings.HasPrefix(lib, e.art.Dir) {
			copyInto(t, lib, filepath.Join(root, lib))
		}
	}
	return root
}

func copyInto(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src) // follows symlinks: the rootfs gets real files
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

var lddPath = regexp.MustCompile(`(?:=>\s*)?(/\S+)\s+\(0x`)

func sharedLibs(t *testing.T, bins ...string) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, b := range bins {
		out, err := exec.Command("ldd", b).Output()
		if err != nil {
			t.Fatalf("ldd %s: %v", b, err)
		}
		for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
			seen[m[1]] = true
		}
	}
	var libs []string
	for l := range seen {
		libs = append(libs, l)
	}
	sort.Strings(libs)
	return libs
}

// writeSpec writes the CDI spec a MIG instance gets: the instance env plus
// exactly hook.CDIEdits, as the cdi package copies them.
func (e *hookEnv) writeSpec(t *testing.T, dir string) string {
	t.Helper()
	e.logFile = filepath.Join(t.TempDir(), "hook.log")
	ed := hook.CDIEdits(hook.EditsConfig{HookPath: e.hookBin, ShimPath: e.art.Shim, AgentSocket: e.sock, LogFile: e.logFile})
	edits := ed.ContainerEdits()
	edits.Env = append([]string{"NVIDIA_VISIBLE_DEVICES=" + hookMIG}, edits.Env...)
	harness.WriteCDISpec(t, dir, &cdispecs.Spec{
		Version: "0.5.0", Kind: hookKind,
		Devices: []cdispecs.Device{{Name: "i0", ContainerEdits: edits}},
	})
	return hookKind + "=i0"
}

func (e *hookEnv) series(id string) []telemetry.Sample {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]telemetry.Sample(nil), e.samples[id]...)
}

// top runs `migctl top --output json` against the agent.
func (e *hookEnv) top(t *testing.T) telemetryapi.Top {
	t.Helper()
	out, err := exec.Command(e.migctl, "top", "--socket", e.sock, "--output", "json").Output()
	if err != nil {
		t.Fatalf("migctl top: %v", err)
	}
	var top telemetryapi.Top
	if err := json.Unmarshal(out, &top); err != nil {
		t.Fatalf("migctl top output %q: %v", out, err)
	}
	return top
}

// checkSeries asserts a finished container's shim series matches want: the
// last sample before exit holds exactly the live bytes and peak, and the
// exit sample drops them.
func checkSeries(t *testing.T, smp []telemetry.Sample, want shimtest.Expected) {
	t.Helper()
	var shim []telemetry.Sample
	for _, s := range smp {
		if s.Source == telemetry.SourceShim {
			shim = append(shim, s)
		}
	}
	if len(shim) < 2 {
		t.Fatalf("shim series too short: %+v", smp)
	}
	before, exit := shim[len(shim)-2], shim[len(shim)-1]
	if before.UsedBytes != want.Current || before.PeakBytes != want.Peak || exit.UsedBytes != 0 {
		t.Errorf("series ends %+v then %+v; want used %d peak %d, then 0", before, exit, want.Current, want.Peak)
	}
	// A peak inside the send interval is not sent at once: the next sample
	// carries it in PeakBytes. No sample may claim more than the peak.
	var maxUsed, maxPeak uint64
	for _, s := range shim {
		maxUsed, maxPeak = max(maxUsed, s.UsedBytes), max(maxPeak, s.PeakBytes)
	}
	if maxPeak != want.Peak || maxUsed > want.Peak {
		t.Errorf("samples peak at %d (used at most %d), want the peak %d carried and never exceeded", maxPeak, maxUsed, want.Peak)
	}
}

// waitGone waits for the poststop hook to deregister container id.
func waitGone(t *testing.T, e *hookEnv, id string) {
	t.Helper()
	eventually(t, "container "+id+" to be deregistered after exit (poststop)", 10*time.Second, func() bool {
		for _, c := range e.top(t).Containers {
			if c.ID == id {
				return false
			}
		}
		return true
	})
}

func (e *hookEnv) ids() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []string
	for id := range e.samples {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// mountPoints lists the host namespace's mount points.
func mountPoints(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("/proc/1/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 4 {
			m[fs[4]] = true
		}
	}
	return m
}

func listing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		fi, _ := e.Info()
		fmt.Fprintf(&b, "%s %v %d\n", e.Name(), fi.ModTime().UnixNano(), fi.Size())
	}
	return b.String()
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// hooksDir writes the shipped hooks.d file into a directory of its own, its
// paths adjusted to this build and its log to a file of the test's; it
// returns the directory (for podman --hooks-dir) and the log file.
func (e *hookEnv) hooksDir(t *testing.T) (dir, logFile string) {
	t.Helper()
	raw, err := os.ReadFile("../deploy/hooks.d/migpro.json")
	if err != nil {
		t.Fatal(err)
	}
	logFile = filepath.Join(t.TempDir(), "hook.log")
	conf := strings.NewReplacer(
		hook.DefaultHookPath, e.hookBin, hook.DefaultAgentSocket, e.sock,
		hook.DefaultShimPath, e.art.Shim, "/var/log/migpro-hook.log", logFile,
	).Replace(string(raw))
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "migpro.json"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, logFile
}
