// Package gpu is migpro's small interface over NVML: the profiles, placements
// and instances of each GPU, and the driver's refusals as typed errors.
//
// Two implementations sit behind it with the same adapter code: nvmlgpu over
// the real go-nvml library, and simgpu, the simulated GPU that enforces the
// driver's rules, plugged into the same adapter.
package gpu
