// Package nvmlgpu implements gpu.Node and gpu.Device over go-nvml's
// nvml.Interface. The same adapter serves the real driver (Open) and the
// simulated one (New with the interface the sim package builds), so every
// code path the agent takes on a simulated node is the one it takes on
// hardware.
//
// NVML return codes become *gpu.DriverError values whose Kind is one of the
// gpu sentinels. After a failed Init nothing else is called: go-nvml aborts
// the process on the first call into a library that never loaded.
package nvmlgpu
