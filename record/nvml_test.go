package record

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fakeNVML is go-nvml's mock with one GPU (MIG off) whose process list is
// procs and whose used memory is used.
func fakeNVML(procs func() []nvml.ProcessInfo, used uint64) *mock.Interface {
	dev := &mock.Device{
		GetMigModeFunc:                 func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS },
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return procs(), nvml.SUCCESS },
		GetMemoryInfoFunc:              func() (nvml.Memory, nvml.Return) { return nvml.Memory{Used: used, Total: 80 << 30}, nvml.SUCCESS },
	}
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 1, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { return dev, nvml.SUCCESS },
	}
}

func TestNVMLCountsTheCommandsProcessTree(t *testing.T) {
	// A child of a child of this process stands in for the command's
	// worker; pid 1 is someone else's.
	cmd := exec.Command("sh", "-c", "sleep 5 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var grandchild uint32
	for i := 0; i < 200 && grandchild == 0; i++ {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if pid, err := strconv.Atoi(e.Name()); err == nil && parentPID(pid) == cmd.Process.Pid {
				grandchild = uint32(pid)
			}
		}
	}
	if grandchild == 0 {
		t.Fatal("no grandchild found")
	}
	procs := func() []nvml.ProcessInfo {
		return []nvml.ProcessInfo{{Pid: 1, UsedGpuMemory: 7 << 30}, {Pid: grandchild, UsedGpuMemory: 3 << 30}}
	}
	src, err := OpenNVML(fakeNVML(procs, 10<<30))
	if err != nil {
		t.Fatal(err)
	}
	proc, dev, err := src.Sample(os.Getpid())
	if err != nil || proc != 3<<30 || dev != 10<<30 {
		t.Fatalf("got proc %d dev %d err %v, want 3 GiB of 10 GiB", proc, dev, err)
	}
	// No listed pid is ours (NVML's pids are the host's): the device's.
	proc, dev, err = src.Sample(cmd.Process.Pid + 1000000)
	if err != nil || proc != 0 || dev != 10<<30 {
		t.Fatalf("no match: got proc %d dev %d err %v", proc, dev, err)
	}
}

func TestOpenNVMLWithoutLibrary(t *testing.T) {
	_, err := OpenNVML(nvml.New(nvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1")))
	if !errors.Is(err, ErrNoNVML) {
		t.Fatalf("want ErrNoNVML, got %v", err)
	}
}
