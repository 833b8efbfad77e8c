package nvmlgpu_test

import (
	"context"
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/nvmlgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

// oneGPU is a minimal NVML with one device whose event registration
// answers reg.
func oneGPU(reg nvml.Return, set *mock.EventSet) *mock.Interface {
	dev := &mock.Device{
		GetNameFunc:        func() (string, nvml.Return) { return "NVIDIA Test", nvml.SUCCESS },
		GetUUIDFunc:        func() (string, nvml.Return) { return "GPU-test", nvml.SUCCESS },
		GetMinorNumberFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		RegisterEventsFunc: func(uint64, nvml.EventSet) nvml.Return { return reg },
	}
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 1, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { return dev, nvml.SUCCESS },
		EventSetCreateFunc:         func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS },
	}
}

func TestWatchXidsRegistrationFailureFreesTheSet(t *testing.T) {
	set := &mock.EventSet{FreeFunc: func() nvml.Return { return nvml.SUCCESS }}
	n, err := nvmlgpu.New(oneGPU(nvml.ERROR_UNKNOWN, set), nvmlgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = n.WatchXids(context.Background())
	var de *gpu.DriverError
	if !errors.As(err, &de) || de.Code != "ERROR_UNKNOWN" {
		t.Fatalf("WatchXids = %v, want the registration's ERROR_UNKNOWN", err)
	}
	if len(set.FreeCalls()) != 1 {
		t.Fatalf("event set freed %d times, want 1", len(set.FreeCalls()))
	}
}

// A GPU that cannot report Xids is skipped; the watch still runs and ends
// (freeing its set) when the context does.
func TestWatchXidsSkipsUnsupportedGPU(t *testing.T) {
	set := &mock.EventSet{
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		WaitFunc: func(uint32) (nvml.EventData, nvml.Return) { return nvml.EventData{}, nvml.ERROR_TIMEOUT },
	}
	n, err := nvmlgpu.New(oneGPU(nvml.ERROR_NOT_SUPPORTED, set), nvmlgpu.WithEventWait(1), nvmlgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	events, err := n.WatchXids(ctx)
	if err != nil {
		t.Fatalf("WatchXids = %v, want the unsupported GPU skipped", err)
	}
	cancel()
	for range events {
		t.Fatal("event from a GPU that reports none")
	}
	if len(set.FreeCalls()) != 1 {
		t.Fatalf("event set freed %d times, want 1", len(set.FreeCalls()))
	}
}
