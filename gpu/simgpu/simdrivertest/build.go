package simdrivertest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// CFLAGS are mk/simdriver.mk's flags, so tests exercise the stubs that ship.
var CFLAGS = []string{"-O2", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"}

// Stubs are the built simulated-driver user space, all in Dir, named as
// `make simdriver` names them (the input of simgpu.InstallDriverRoot), plus
// CudaProg, the test program (testdata/cudaprog.c).
type Stubs struct {
	Dir      string
	CudaProg string
}

// Build compiles the stubs and the test program into dir.
func Build(dir string) (Stubs, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return Stubs{}, errors.New("simdrivertest: cannot locate source tree")
	}
	here := filepath.Dir(file)
	src := filepath.Join(filepath.Dir(here), "driver")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Stubs{}, fmt.Errorf("simdrivertest: %w", err)
	}
	s := Stubs{Dir: dir, CudaProg: filepath.Join(dir, "cudaprog")}
	state := filepath.Join(src, "simstate.c")
	steps := [][]string{
		{"-fPIC", "-shared", "-Wl,-soname,libcuda.so.1", "-Wl,-Bsymbolic", "-o", filepath.Join(dir, "libcuda.so"), filepath.Join(src, "cuda.c"), filepath.Join(src, "cuda_device.c"), state, "-lpthread"},
		{"-fPIC", "-shared", "-Wl,-soname,libnvidia-ml.so.1", "-o", filepath.Join(dir, "libnvidia-ml.so"), filepath.Join(src, "nvml.c")},
		{"-o", filepath.Join(dir, "nvidia-smi"), filepath.Join(src, "nvidia_smi.c"), state},
	}
	for _, st := range steps {
		if err := gcc(append(append([]string{}, CFLAGS...), st...)); err != nil {
			return s, err
		}
	}
	return s, BuildCudaProg(s.CudaProg, nil)
}

// BuildCudaProg compiles the test program to out, with extra flags first
// (a sysroot, to run it in another glibc's rootfs).
func BuildCudaProg(out string, extra []string) error {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return errors.New("simdrivertest: cannot locate source tree")
	}
	src := filepath.Join(filepath.Dir(file), "testdata", "cudaprog.c")
	return gcc(append(append([]string{}, extra...), "-O2", "-Wall", "-o", out, src, "-ldl"))
}

func gcc(args []string) error {
	out, err := exec.Command("gcc", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("simdrivertest: gcc %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
