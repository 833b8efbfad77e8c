package gpu

import (
	"errors"
	"fmt"
)

// Sentinel errors for the driver's refusals. A DriverError matches one of
// these with errors.Is, so callers never compare NVML return codes.
var (
	ErrInsufficientResources = errors.New("insufficient resources")
	ErrInUse                 = errors.New("in use")
	ErrInvalidArgument       = errors.New("invalid argument")
	ErrNotSupported          = errors.New("not supported")
	ErrNotFound              = errors.New("not found")
	// ErrNoLibrary means libnvidia-ml.so could not be loaded.
	ErrNoLibrary = errors.New("NVML library not found (is the NVIDIA driver installed? use --simulate to run without a GPU)")
)

// DriverError is a refusal from NVML (real or simulated), keeping the
// driver's own code name so logs read like nvidia-smi.
type DriverError struct {
	Op   string // what was attempted
	Code string // the NVML return name, e.g. "ERROR_IN_USE"
	Kind error  // one of the sentinels above, or nil
}

func (e *DriverError) Error() string { return fmt.Sprintf("%s: %s", e.Op, e.Code) }

// Is lets errors.Is(err, gpu.ErrInUse) work on driver errors.
func (e *DriverError) Is(target error) bool { return e.Kind != nil && target == e.Kind }
