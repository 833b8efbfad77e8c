package shimtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/migpro/migpro/telemetry"
	"github.com/migpro/migpro/telemetry/telemetrytest"
)

var (
	buildOnce sync.Once
	built     Artifacts
	buildErr  error
)

func artifacts(tb testing.TB) Artifacts {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "shimtest")
		if err != nil {
			buildErr = err
			return
		}
		built, buildErr = Build(dir)
	})
	if buildErr != nil {
		tb.Fatalf("building shim fixtures: %v", buildErr)
	}
	return built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.Dir != "" {
		os.RemoveAll(built.Dir)
	}
	os.Exit(code)
}

func service(t *testing.T) (*telemetry.Service, telemetry.Endpoint) {
	t.Helper()
	s := telemetrytest.New(t)
	ep, err := s.Register(telemetry.Registration{ID: "ctr"})
	if err != nil {
		t.Fatal(err)
	}
	return s, ep
}

func runPattern(t *testing.T, a Artifacts, socket string, steps ...string) {
	t.Helper()
	runPatternVia(t, a, socket, "link", steps...)
}

func runPatternVia(t *testing.T, a Artifacts, socket, via string, steps ...string) {
	t.Helper()
	cmd := exec.Command(a.Pattern, steps...)
	cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "MIGPRO_TELEMETRY_SOCKET=" + socket, "STUB_TOTAL_BYTES=1048576000", "PATTERN_VIA=" + via}
	if via == "link-now" { // linked, every reference bound at start-up
		cmd.Env = append(cmd.Env, "PATTERN_VIA=link", "LD_BIND_NOW=1")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pattern %v: %v\n%s", steps, err, out)
	}
}

func waitTop(t *testing.T, s *telemetry.Service, cond func(telemetry.TopEntry) bool) telemetry.TopEntry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		top := s.Top()
		if len(top.Containers) == 1 && cond(top.Containers[0]) {
			return top.Containers[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out; top = %+v", top)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The agent must receive exactly the bytes the program allocated and freed,
// through every intercepted call, from several threads, however the program
// reached the driver: linked symbols, dlsym on its own libcuda handle, or
// cuGetProcAddress as the CUDA runtime does (both bypass LD_PRELOAD unless
// the shim wraps dlsym and cuGetProcAddress); linked symbols both bound
// lazily and at start-up (LD_BIND_NOW), since the shim's exports are
// indirect functions (hook/shim/exports.c).
func TestShimReportsExactCounts(t *testing.T) {
	for _, via := range []string{"link", "link-now", "dlsym", "procaddress"} {
		t.Run(via, func(t *testing.T) { testExactCounts(t, via) })
	}
}

func testExactCounts(t *testing.T, via string) {
	a := artifacts(t)
	s, ep := service(t)
	steps := strings.Fields("alloc:1000 alloc:5000 pitch:100:3 managed:700 async:300 pool:200 create:4096 " +
		"free:1 free:4 free:6 threads:4:2000:64 sleep:150 info")
	want, err := Expect(steps)
	if err != nil {
		t.Fatal(err)
	}
	runPatternVia(t, a, ep.Socket, via, steps...)
	e := waitTop(t, s, func(e telemetry.TopEntry) bool { return e.Samples > 0 && e.Processes == 0 })
	if e.Allocs != want.Allocs || e.Frees != want.Frees || e.PeakBytes != want.Peak || e.CapacityBytes != 1048576000 {
		t.Errorf("top %+v, want %+v and capacity 1048576000", e, want)
	}
	smp := s.Samples("ctr")
	if len(smp) < 2 {
		t.Fatalf("samples %+v", smp)
	}
	// The sample from the final info call holds the live bytes; the exit
	// sample then drops the process.
	if got := smp[len(smp)-2]; got.UsedBytes != want.Current || got.PeakBytes != want.Peak {
		t.Errorf("before exit %+v, want used %d peak %d", got, want.Current, want.Peak)
	}
	if got := smp[len(smp)-1]; got.UsedBytes != 0 {
		t.Errorf("after exit %+v, want 0 bytes", got)
	}
	if st := s.Stats(); st.Malformed+st.Oversized+st.Stale+st.RateLimited != 0 {
		t.Errorf("drops %+v", st)
	}
}

// New peaks respect the interval: inside one, a peak is only marked; the
// next call after the interval sends it (flagged), and the exit sample
// carries the final one.
func TestShimPeaksRespectInterval(t *testing.T) {
	a := artifacts(t)
	l := listen(t)
	runRaw(t, a, l.path, nil, "alloc:10", "alloc:20", "grow:100:50:0", "sleep:150", "alloc:5", "free:0")
	msgs := l.wait(t, func(ms []telemetry.Message) bool { return len(ms) > 0 && ms[len(ms)-1].Flags&flagExit != 0 })
	var peaks []uint64
	for _, m := range msgs {
		peaks = append(peaks, m.Peak)
	}
	// The first allocation sends at once; the next 51 fall inside the
	// interval; the one after the sleep sends the peak they built; exit.
	if want := []uint64{10, 5035, 5035}; !slices.Equal(peaks, want) {
		t.Fatalf("peaks sent %v, want %v (messages %+v)", peaks, want, msgs)
	}
	if msgs[1].Flags&flagPeak == 0 || msgs[1].Current != 5035 || msgs[2].Current != 5025 || msgs[2].Allocs != 53 || msgs[2].Frees != 1 {
		t.Fatalf("messages %+v", msgs)
	}
}

// Without an agent, or in processes that never touch CUDA, the shim is
// silent and harmless.
func TestShimWithoutAgentOrCUDA(t *testing.T) {
	a := artifacts(t)
	runPattern(t, a, "/nonexistent/telemetry.sock", "alloc:100", "free:0", "sleep:120", "info")
	s, ep := service(t)
	cmd := exec.Command("/bin/sh", "-c", "true")
	cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "MIGPRO_TELEMETRY_SOCKET=" + ep.Socket}
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("sh under the shim: %v %q", err, out)
	}
	time.Sleep(50 * time.Millisecond) // nothing is expected; give a stray datagram time to land
	if st := s.Stats(); st.Accepted+st.Malformed != 0 {
		t.Errorf("non-CUDA process sent datagrams: %+v", st)
	}
}

// shimCost runs the bench program once: per cuMemAlloc_v2 + cuMemFree_v2
// pair and per growing allocation (each a new peak), through the stub alone
// and through shim + stub, fastest of interleaved blocks, in one process.
type shimCost struct{ stubPair, shimPair, stubGrow, shimGrow float64 }

func measureShimCost(tb testing.TB, blocks, pairs, grows int) shimCost {
	tb.Helper()
	a := artifacts(tb)
	ep, err := telemetrytest.New(tb).Register(telemetry.Registration{ID: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(a.Bench, strconv.Itoa(blocks), strconv.Itoa(pairs), strconv.Itoa(grows))
	cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "MIGPRO_TELEMETRY_SOCKET=" + ep.Socket}
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("bench: %v", err)
	}
	f := strings.Fields(string(out))
	var v [4]float64
	if len(f) != 4 {
		tb.Fatalf("bench output %q", out)
	}
	for i := range v {
		if v[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			tb.Fatalf("bench output %q", out)
		}
	}
	return shimCost{v[0], v[1], v[2], v[3]}
}

// BenchmarkShimAllocFreePair reports, from one run, the cost per
// alloc+free pair and per growing allocation, without and with the shim,
// and the ratios (the target for growing allocations is at most 2).
func BenchmarkShimAllocFreePair(b *testing.B) {
	c := measureShimCost(b, 10, max(b.N/10, 1000), 2000)
	b.ReportMetric(c.stubPair, "stub-ns/pair")
	b.ReportMetric(c.shimPair, "shim-ns/pair")
	b.ReportMetric(c.shimPair/c.stubPair, "pair-ratio")
	b.ReportMetric(c.stubGrow, "stub-ns/grow")
	b.ReportMetric(c.shimGrow, "shim-ns/grow")
	b.ReportMetric(c.shimGrow/c.stubGrow, "grow-ratio")
}

// The Makefile builds the shipped shim; these tests build their own. Both
// must use the same flags, or the tests prove nothing about what ships.
func TestMakefileUsesSameShimFlags(t *testing.T) {
	src, err := SourceDir()
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(src, "..", "mk", "hook.mk"))
	if err != nil {
		t.Fatal(err)
	}
	want := "SHIM_CFLAGS = " + strings.Join(ShimCFLAGS, " ")
	for _, line := range strings.Split(string(mk), "\n") {
		if strings.HasPrefix(line, "SHIM_CFLAGS") {
			if strings.TrimSpace(line) != want {
				t.Fatalf("mk/hook.mk has %q, tests build with %q", line, want)
			}
			return
		}
	}
	t.Fatal("mk/hook.mk defines no SHIM_CFLAGS")
}
