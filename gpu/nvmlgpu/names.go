package nvmlgpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// namer only formats names; go-nvlib's NewMigProfile never touches the NVML
// handle, so a nil library is safe here and keeps naming usable before Init.
var namer = device.New(nil)

// fullCIProfileBySlices maps a slice count to the compute-instance profile
// that spans the whole GPU instance. Passing it to go-nvlib makes C equal G,
// so the name carries no "Nc." prefix.
var fullCIProfileBySlices = map[int]int{
	1: nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE,
	2: nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE,
	3: nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE,
	4: nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE,
	6: nvml.COMPUTE_INSTANCE_PROFILE_6_SLICE,
	7: nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE,
	8: nvml.COMPUTE_INSTANCE_PROFILE_8_SLICE,
}

// ProfileName gives the canonical MIG name ("1g.5gb", "1g.10gb+me") of a
// GPU-instance profile, the way nvidia-smi and the device plugin spell it.
// The memory figure is derived from the profile's share of the whole device,
// so deviceMemBytes must be the device's total framebuffer.
func ProfileName(giProfileID, slices int, memMiB, deviceMemBytes uint64) (string, error) {
	ci, ok := fullCIProfileBySlices[slices]
	if !ok {
		return "", fmt.Errorf("name GPU-instance profile %d: no full-size compute profile for %d slices", giProfileID, slices)
	}
	p, err := namer.NewMigProfile(giProfileID, ci, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, memMiB, deviceMemBytes)
	if err != nil {
		return "", fmt.Errorf("name GPU-instance profile %d: %w", giProfileID, err)
	}
	return p.String(), nil
}
