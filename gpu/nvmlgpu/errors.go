package nvmlgpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu"
)

// codeNames spells NVML return codes the way nvml.h does. go-nvml's own
// Return.String asks the loaded library for a prose message instead, which
// makes logs differ between the real and simulated drivers and would call
// into a library that may never have loaded.
var codeNames = map[nvml.Return]string{
	nvml.SUCCESS:                         "SUCCESS",
	nvml.ERROR_UNINITIALIZED:             "ERROR_UNINITIALIZED",
	nvml.ERROR_INVALID_ARGUMENT:          "ERROR_INVALID_ARGUMENT",
	nvml.ERROR_NOT_SUPPORTED:             "ERROR_NOT_SUPPORTED",
	nvml.ERROR_NO_PERMISSION:             "ERROR_NO_PERMISSION",
	nvml.ERROR_ALREADY_INITIALIZED:       "ERROR_ALREADY_INITIALIZED",
	nvml.ERROR_NOT_FOUND:                 "ERROR_NOT_FOUND",
	nvml.ERROR_INSUFFICIENT_SIZE:         "ERROR_INSUFFICIENT_SIZE",
	nvml.ERROR_INSUFFICIENT_POWER:        "ERROR_INSUFFICIENT_POWER",
	nvml.ERROR_DRIVER_NOT_LOADED:         "ERROR_DRIVER_NOT_LOADED",
	nvml.ERROR_TIMEOUT:                   "ERROR_TIMEOUT",
	nvml.ERROR_IRQ_ISSUE:                 "ERROR_IRQ_ISSUE",
	nvml.ERROR_LIBRARY_NOT_FOUND:         "ERROR_LIBRARY_NOT_FOUND",
	nvml.ERROR_FUNCTION_NOT_FOUND:        "ERROR_FUNCTION_NOT_FOUND",
	nvml.ERROR_CORRUPTED_INFOROM:         "ERROR_CORRUPTED_INFOROM",
	nvml.ERROR_GPU_IS_LOST:               "ERROR_GPU_IS_LOST",
	nvml.ERROR_RESET_REQUIRED:            "ERROR_RESET_REQUIRED",
	nvml.ERROR_OPERATING_SYSTEM:          "ERROR_OPERATING_SYSTEM",
	nvml.ERROR_LIB_RM_VERSION_MISMATCH:   "ERROR_LIB_RM_VERSION_MISMATCH",
	nvml.ERROR_IN_USE:                    "ERROR_IN_USE",
	nvml.ERROR_MEMORY:                    "ERROR_MEMORY",
	nvml.ERROR_NO_DATA:                   "ERROR_NO_DATA",
	nvml.ERROR_VGPU_ECC_NOT_SUPPORTED:    "ERROR_VGPU_ECC_NOT_SUPPORTED",
	nvml.ERROR_INSUFFICIENT_RESOURCES:    "ERROR_INSUFFICIENT_RESOURCES",
	nvml.ERROR_FREQ_NOT_SUPPORTED:        "ERROR_FREQ_NOT_SUPPORTED",
	nvml.ERROR_ARGUMENT_VERSION_MISMATCH: "ERROR_ARGUMENT_VERSION_MISMATCH",
	nvml.ERROR_DEPRECATED:                "ERROR_DEPRECATED",
	nvml.ERROR_UNKNOWN:                   "ERROR_UNKNOWN",
}

// CodeName is the nvml.h name of a return code, e.g. "ERROR_IN_USE". It never
// calls into the NVML library.
func CodeName(ret nvml.Return) string {
	if s, ok := codeNames[ret]; ok {
		return s
	}
	return fmt.Sprintf("NVML_RETURN_%d", int32(ret))
}

var kinds = map[nvml.Return]error{
	nvml.ERROR_INSUFFICIENT_RESOURCES: gpu.ErrInsufficientResources,
	nvml.ERROR_IN_USE:                 gpu.ErrInUse,
	nvml.ERROR_INVALID_ARGUMENT:       gpu.ErrInvalidArgument,
	nvml.ERROR_NOT_SUPPORTED:          gpu.ErrNotSupported,
	nvml.ERROR_NOT_FOUND:              gpu.ErrNotFound,
}

// driverError wraps a failed NVML call. op says what migpro was doing, with
// the GPU and instance, because the bare code cannot tell two refusals apart.
func driverError(op string, ret nvml.Return) error {
	return &gpu.DriverError{Op: op, Code: CodeName(ret), Kind: kinds[ret]}
}
