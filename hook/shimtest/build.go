package shimtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ShimCFLAGS are the flags mk/hook.mk uses for the shim too, so tests
// exercise the library that ships.
var ShimCFLAGS = []string{"-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-fvisibility=hidden"}

// ShimLIBS are the libraries mk/hook.mk links the shim with (SHIM_LIBS).
// The shim needs libc alone.
var ShimLIBS = []string{}

// Artifacts are the built files, all in Dir.
type Artifacts struct {
	Dir     string
	Shim    string // libmigpro-shim.so
	Stub    string // libcuda.so.1 (with a libcuda.so link beside it)
	Pattern string // scripted allocator, rpath $ORIGIN
	Bench   string // overhead benchmark, rpath $ORIGIN
	Flood   string // garbage flooder for hostile-input tests
	Chain   string // chainprog: a program whose library chains dlsym(RTLD_NEXT), rpath $ORIGIN
}

// SourceDir is hook/ in the source tree.
func SourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("shimtest: cannot locate source tree")
	}
	return filepath.Dir(filepath.Dir(file)), nil
}

// Build compiles everything into dir.
func Build(dir string) (Artifacts, error) {
	a, err := BuildPrograms(dir, nil)
	if err != nil {
		return a, err
	}
	src, err := SourceDir()
	if err != nil {
		return a, err
	}
	shimSrc, err := filepath.Glob(filepath.Join(src, "shim", "*.c"))
	if err != nil || len(shimSrc) == 0 {
		return a, fmt.Errorf("shimtest: no shim sources in %s: %w", filepath.Join(src, "shim"), err)
	}
	shimArgs := append(append(append([]string{}, ShimCFLAGS...), "-o", a.Shim), shimSrc...)
	return a, gcc(dir, append(shimArgs, ShimLIBS...))
}

// BuildPrograms compiles the stub libcuda and the test programs into dir,
// with extra flags first on every gcc line (a sysroot, say), but not the
// shim: Build adds it, built as it ships.
func BuildPrograms(dir string, extra []string) (Artifacts, error) {
	src, err := SourceDir()
	if err != nil {
		return Artifacts{}, err
	}
	td := filepath.Join(src, "shimtest", "testdata")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Artifacts{}, fmt.Errorf("shimtest: %w", err)
	}
	a := Artifacts{
		Dir: dir, Shim: filepath.Join(dir, "libmigpro-shim.so"), Stub: filepath.Join(dir, "libcuda.so.1"),
		Pattern: filepath.Join(dir, "pattern"), Bench: filepath.Join(dir, "bench"), Flood: filepath.Join(dir, "flood"),
		Chain: filepath.Join(dir, "chainprog"),
	}
	with := func(args ...string) []string { return append(append([]string{}, extra...), args...) }
	// -Bsymbolic: like the real driver, the stub's own references to its
	// entry points (what cuGetProcAddress hands out) are not interposable.
	if err := gcc(dir, with("-O2", "-Wall", "-fPIC", "-shared", "-Wl,-soname,libcuda.so.1", "-Wl,-Bsymbolic", "-o", a.Stub, filepath.Join(td, "stubcuda.c"))); err != nil {
		return a, err
	}
	if err := os.Symlink("libcuda.so.1", filepath.Join(dir, "libcuda.so")); err != nil && !errors.Is(err, os.ErrExist) {
		return a, fmt.Errorf("shimtest: linking libcuda.so: %w", err)
	}
	for _, args := range [][]string{
		{"-O2", "-Wall", "-o", a.Pattern, filepath.Join(td, "pattern.c"), "-L" + dir, "-lcuda", "-lpthread", "-ldl", "-Wl,-rpath,$ORIGIN"},
		{"-O2", "-Wall", "-o", a.Bench, filepath.Join(td, "bench.c"), "-L" + dir, "-lcuda", "-ldl", "-Wl,-rpath,$ORIGIN"},
		{"-O2", "-Wall", "-o", a.Flood, filepath.Join(td, "flood.c")},
		{"-O2", "-Wall", "-fPIC", "-shared", "-o", filepath.Join(dir, "libchain.so"), filepath.Join(td, "chain.c"), "-ldl"},
		{"-O2", "-Wall", "-o", a.Chain, filepath.Join(td, "chainprog.c"), "-L" + dir, "-Wl,--no-as-needed", "-lchain", "-ldl", "-Wl,-rpath,$ORIGIN"},
	} {
		if err := gcc(dir, with(args...)); err != nil {
			return a, err
		}
	}
	return a, nil
}

func gcc(dir string, args []string) error {
	cmd := exec.Command("gcc", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("shimtest: gcc %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Expected is what the shim must report for a pattern.
type Expected struct {
	Current, Peak, Allocs, Frees uint64
}

// Expect computes, independently of the shim, the counters a pattern run
// must produce (see testdata/pattern.c for the steps). Thread steps add
// allocations and frees but no lasting bytes; their transient use must stay
// below the peak reached before them, which Expect checks so the expected
// peak is exact.
func Expect(steps []string) (Expected, error) {
	var e Expected
	var live []uint64 // size per allocation index; 0 once freed
	num := func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }
	for _, st := range steps {
		f := strings.Split(st, ":")
		var n uint64
		var err error
		switch f[0] {
		case "alloc", "managed", "async", "pool", "create":
			n, err = num(f[1])
		case "pitch":
			var w, h uint64
			if w, err = num(f[1]); err == nil {
				h, err = num(f[2])
			}
			n = (w + 255) &^ 255 * h
		case "free":
			var i uint64
			if i, err = num(f[1]); err != nil || i >= uint64(len(live)) || live[i] == 0 {
				return e, fmt.Errorf("shimtest: bad step %q", st)
			}
			e.Current -= live[i]
			live[i] = 0
			e.Frees++
			continue
		case "grow":
			var c uint64
			if n, err = num(f[1]); err == nil {
				c, err = num(f[2])
			}
			if err != nil || len(f) != 4 {
				return e, fmt.Errorf("shimtest: bad step %q", st)
			}
			for range c {
				live = append(live, n)
				e.Current += n
				e.Allocs++
			}
			e.Peak = max(e.Peak, e.Current)
			continue
		case "threads":
			var t, k, sz uint64
			if t, err = num(f[1]); err == nil {
				if k, err = num(f[2]); err == nil {
					sz, err = num(f[3])
				}
			}
			if err == nil && e.Current+t*sz > e.Peak {
				err = errors.New("thread transient would set a new peak")
			}
			e.Allocs += t * k
			e.Frees += t * k
			if err != nil {
				return e, fmt.Errorf("shimtest: step %q: %w", st, err)
			}
			continue
		default:
			continue // info, sleep
		}
		if err != nil {
			return e, fmt.Errorf("shimtest: step %q: %w", st, err)
		}
		live = append(live, n)
		e.Current += n
		e.Allocs++
		e.Peak = max(e.Peak, e.Current)
	}
	return e, nil
}
