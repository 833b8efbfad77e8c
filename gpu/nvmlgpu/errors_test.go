package nvmlgpu

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu"
)

func TestDriverErrorKinds(t *testing.T) {
	sentinels := []error{gpu.ErrInsufficientResources, gpu.ErrInUse, gpu.ErrInvalidArgument, gpu.ErrNotSupported, gpu.ErrNotFound}
	cases := []struct {
		ret  nvml.Return
		code string
		kind error
	}{
		{nvml.ERROR_INSUFFICIENT_RESOURCES, "ERROR_INSUFFICIENT_RESOURCES", gpu.ErrInsufficientResources},
		{nvml.ERROR_IN_USE, "ERROR_IN_USE", gpu.ErrInUse},
		{nvml.ERROR_INVALID_ARGUMENT, "ERROR_INVALID_ARGUMENT", gpu.ErrInvalidArgument},
		{nvml.ERROR_NOT_SUPPORTED, "ERROR_NOT_SUPPORTED", gpu.ErrNotSupported},
		{nvml.ERROR_NOT_FOUND, "ERROR_NOT_FOUND", gpu.ErrNotFound},
		{nvml.ERROR_GPU_IS_LOST, "ERROR_GPU_IS_LOST", nil},
		{nvml.Return(12345), "NVML_RETURN_12345", nil},
	}
	for _, c := range cases {
		err := driverError("create GPU instance 3g.20gb at 4:4 on GPU 0", c.ret)
		if want := "create GPU instance 3g.20gb at 4:4 on GPU 0: " + c.code; err.Error() != want {
			t.Errorf("%d: message %q, want %q", c.ret, err.Error(), want)
		}
		for _, s := range sentinels {
			if got := errors.Is(err, s); got != errors.Is(c.kind, s) {
				t.Errorf("%s: errors.Is(%v) = %v", c.code, s, got)
			}
		}
	}
}

func TestProfileNameRejectsUnknownSlices(t *testing.T) {
	if _, err := ProfileName(nvml.GPU_INSTANCE_PROFILE_1_SLICE, 5, 1000, 40<<30); err == nil {
		t.Fatal("5-slice profile named without error")
	}
	name, err := ProfileName(nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, 1, 4864, 40960<<20)
	if err != nil || name != "1g.5gb+me" {
		t.Fatalf("name = %q, %v; want 1g.5gb+me", name, err)
	}
}
