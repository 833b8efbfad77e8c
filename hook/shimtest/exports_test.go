package shimtest

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migpro/migpro/telemetry"
)

// exportsProgs are the programs of the export tests, built against the
// stub libcuda of a.
type exportsProgs struct {
	weak, weakNoPIE, weakLinked string // testdata/weakcuda.c: alone, alone without PIE, linked against libcuda
	userLinked, userDlopen      string // testdata/cudauserprog.c: linked against libcudauser.so, or dlopen()ing it
}

func buildExportsProgs(t *testing.T, a Artifacts) exportsProgs {
	t.Helper()
	src, err := SourceDir()
	if err != nil {
		t.Fatal(err)
	}
	td := filepath.Join(src, "shimtest", "testdata")
	dir := t.TempDir()
	p := exportsProgs{
		weak: filepath.Join(dir, "weakcuda"), weakNoPIE: filepath.Join(dir, "weakcuda-nopie"), weakLinked: filepath.Join(dir, "weakcuda-linked"),
		userLinked: filepath.Join(dir, "cudauser-linked"), userDlopen: filepath.Join(dir, "cudauser-dlopen"),
	}
	rpath := "-Wl,-rpath," + dir + ":" + a.Dir
	for _, args := range [][]string{
		{"-O2", "-Wall", "-o", p.weak, filepath.Join(td, "weakcuda.c")},
		{"-O2", "-Wall", "-no-pie", "-o", p.weakNoPIE, filepath.Join(td, "weakcuda.c")},
		// --no-as-needed: the weak references alone would not keep libcuda.
		{"-O2", "-Wall", "-o", p.weakLinked, filepath.Join(td, "weakcuda.c"), "-L" + a.Dir, "-Wl,--no-as-needed", "-lcuda", rpath},
		{"-O2", "-Wall", "-fPIC", "-shared", "-o", filepath.Join(dir, "libcudauser.so"), filepath.Join(td, "cudauser.c"), "-L" + a.Dir, "-lcuda", rpath},
		{"-O2", "-Wall", "-DLINKED", "-o", p.userLinked, filepath.Join(td, "cudauserprog.c"), "-L" + dir, "-lcudauser", rpath},
		{"-O2", "-Wall", "-o", p.userDlopen, filepath.Join(td, "cudauserprog.c"), "-ldl", rpath},
	} {
		if err := gcc(dir, args); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// runUnderShim runs prog with the shim preloaded (plus env) and returns its
// stdout; stderr is only shown when it fails.
func runUnderShim(t *testing.T, a Artifacts, socket, prog string, env ...string) string {
	t.Helper()
	cmd := exec.Command(prog)
	cmd.Env = append([]string{"LD_PRELOAD=" + a.Shim, "MIGPRO_TELEMETRY_SOCKET=" + socket}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", filepath.Base(prog), env, err, stdout.String(), stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// exitCounts waits for the exit sample of the process that ran as pid and
// returns its allocation and free counts.
func exitCounts(t *testing.T, l *rawListener, pid int) (allocs, frees uint64) {
	t.Helper()
	l.wait(t, func([]telemetry.Message) bool {
		ms := l.byPID(uint32(pid))
		return len(ms) > 0 && ms[len(ms)-1].Flags&flagExit != 0
	})
	ms := l.byPID(uint32(pid))
	return ms[len(ms)-1].Allocs, ms[len(ms)-1].Frees
}

// A program that is not linked against libcuda and asks "is the driver
// there?" through weak references reads NULL under the shim, as without it
// (issue 33, low 8: the loader bound them to the shim's exports). PIE and
// non-PIE programs both bind them at start-up.
func TestShimWeakReferenceSeesNoDriver(t *testing.T) {
	a := artifacts(t)
	p := buildExportsProgs(t, a)
	for _, prog := range []string{p.weak, p.weakNoPIE} {
		for _, env := range [][]string{nil, {"LD_BIND_NOW=1"}} {
			out, err := exec.Command(prog).Output()
			if err != nil || strings.TrimSpace(string(out)) != "no no no" {
				t.Fatalf("%s without the shim: %v %q", filepath.Base(prog), err, out)
			}
			if got := runUnderShim(t, a, "/nonexistent/telemetry.sock", prog, env...); got != "no no no" {
				t.Errorf("%s %v under the shim says %q, want \"no no no\"", filepath.Base(prog), env, got)
			}
		}
	}
}

// Programs and libraries linked against libcuda keep every call counted,
// however the loader binds the shim's exports: on the first call (lazy),
// at start-up (LD_BIND_NOW=1), through a function pointer in a library's
// data (bound while that library is relocated, before the shim), through
// weak references, and in a library dlopen()ed later without RTLD_GLOBAL,
// whose libcuda stays out of the global scope.
//
// Nothing is printed, except glibc's one documented x86-64 warning ("Relink
// ... for IFUNC symbol", docs/hook.md's known limits) for a library loaded
// at start-up that binds a wrapped name before the shim is relocated.
func TestShimCountsLinkedCallers(t *testing.T) {
	a := artifacts(t)
	p := buildExportsProgs(t, a)
	for _, tc := range []struct {
		prog, want    string
		allocs, frees uint64
	}{
		{p.weakLinked, "yes yes yes 0 0", 1, 1},
		{p.userLinked, "ok", 2, 2},
		{p.userDlopen, "ok", 2, 2},
	} {
		for _, env := range [][]string{nil, {"LD_BIND_NOW=1"}} {
			t.Run(fmt.Sprintf("%s%v", filepath.Base(tc.prog), env), func(t *testing.T) {
				l := listen(t)
				cmd := exec.Command(tc.prog)
				cmd.Env = append([]string{"LD_PRELOAD=" + a.Shim, "MIGPRO_TELEMETRY_SOCKET=" + l.path, "MIGPRO_TELEMETRY_INTERVAL_MS=0"}, env...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil || strings.TrimSpace(string(out)) != tc.want {
					t.Fatalf("%v %q, want %q\nstderr: %s", err, out, tc.want, stderr.String())
				}
				for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
					if line != "" && (tc.prog != p.userLinked || !strings.Contains(line, ": Relink `") || !strings.Contains(line, "for IFUNC symbol `cuMem")) {
						t.Errorf("stderr: %q", line)
					}
				}
				if al, fr := exitCounts(t, l, cmd.Process.Pid); al != tc.allocs || fr != tc.frees {
					t.Fatalf("the shim counted %d allocations and %d frees, want %d and %d", al, fr, tc.allocs, tc.frees)
				}
			})
		}
	}
}
