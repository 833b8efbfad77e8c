package nvmlgpu_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/nvmlgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

// hostHasNVML reports whether libnvidia-ml is installed where the loader
// would find it, in which case Open is expected to get further.
func hostHasNVML() bool {
	for _, dir := range []string{"/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu"} {
		if _, err := os.Stat(filepath.Join(dir, "libnvidia-ml.so.1")); err == nil {
			return true
		}
	}
	return false
}

func TestOpenWithoutLibrary(t *testing.T) {
	if hostHasNVML() {
		t.Skip("libnvidia-ml.so.1 is installed on this host")
	}
	n, err := nvmlgpu.Open(nvmlgpu.WithLogger(quietlog.New()))
	if err == nil {
		n.Close()
		t.Fatal("Open succeeded without libnvidia-ml")
	}
	if !errors.Is(err, gpu.ErrNoLibrary) {
		t.Fatalf("Open error = %v, want gpu.ErrNoLibrary", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
}

// A library path that cannot exist fails the same way on every host.
func TestNewWithMissingLibrary(t *testing.T) {
	lib := nvml.New(nvml.WithLibraryPath(filepath.Join(t.TempDir(), "libnvidia-ml.so.1")))
	if _, err := nvmlgpu.New(lib, nvmlgpu.WithLogger(quietlog.New())); !errors.Is(err, gpu.ErrNoLibrary) {
		t.Fatalf("New error = %v, want gpu.ErrNoLibrary", err)
	}
}

// After a failed Init the adapter must not touch NVML again. The mock has
// only InitFunc set, so any other call panics and fails the test.
func TestNothingCalledAfterFailedInit(t *testing.T) {
	for _, c := range []struct {
		ret  nvml.Return
		want error
		code string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, gpu.ErrNoLibrary, ""},
		{nvml.ERROR_DRIVER_NOT_LOADED, nil, "ERROR_DRIVER_NOT_LOADED"},
		{nvml.ERROR_NO_PERMISSION, nil, "ERROR_NO_PERMISSION"},
	} {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return c.ret }}
		n, err := nvmlgpu.New(lib, nvmlgpu.WithLogger(quietlog.New()))
		if n != nil || err == nil {
			t.Fatalf("Init %d: New succeeded", c.ret)
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("Init %d: error %v, want %v", c.ret, err, c.want)
		}
		var de *gpu.DriverError
		if c.code != "" && (!errors.As(err, &de) || de.Code != c.code) {
			t.Errorf("Init %d: error %v, want code %s", c.ret, err, c.code)
		}
		if calls := len(lib.InitCalls()); calls != 1 {
			t.Errorf("Init called %d times", calls)
		}
	}
}

// When discovery fails after a good Init, the library is shut down again.
func TestShutdownAfterFailedDiscovery(t *testing.T) {
	lib := &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
	}
	_, err := nvmlgpu.New(lib, nvmlgpu.WithLogger(quietlog.New()))
	var de *gpu.DriverError
	if !errors.As(err, &de) || de.Code != "ERROR_GPU_IS_LOST" || !strings.Contains(de.Op, "count GPUs") {
		t.Fatalf("error = %v, want count failure with ERROR_GPU_IS_LOST", err)
	}
	if len(lib.ShutdownCalls()) != 1 {
		t.Fatalf("Shutdown called %d times, want 1", len(lib.ShutdownCalls()))
	}
}

func TestCloseShutsDownOnce(t *testing.T) {
	lib := &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
	}
	n, err := nvmlgpu.New(lib, nvmlgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	if n.Paths() != nvmlgpu.DefaultPaths || len(n.Devices()) != 0 {
		t.Fatalf("paths %+v devices %d", n.Paths(), len(n.Devices()))
	}
	for i := 0; i < 2; i++ {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(lib.ShutdownCalls()) != 1 {
		t.Fatalf("Shutdown called %d times, want 1", len(lib.ShutdownCalls()))
	}
}
