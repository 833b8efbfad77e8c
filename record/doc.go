// Package record runs one command with the telemetry shim preloaded and
// records its GPU memory series, the job of `migctl record`: "how much GPU
// memory does my workload need, and how does it grow?".
//
// The command inherits stdin, stdout and stderr; signals sent to the
// recorder are passed on to it, and its exit status is returned. The shim
// (hook/shim) reports to a datagram socket the recorder owns, so no agent
// is needed. Where NVML is available the recorder also polls the memory
// the command's processes hold per NVML. The series is written in the trace
// format of predictor/trace (t, used_bytes, requested_bytes, driver_allocs),
// which `migctl predict` and `migctl estimate` read:
//
//   - t: seconds since the command started;
//   - used_bytes: max(shim, NVML), the agent's rule: the shim's live driver
//     allocations summed over the command's processes, or NVML's
//     per-process figure (context included) when larger;
//   - requested_bytes: the shim's live bytes;
//   - driver_allocs: the shim's allocation calls so far, summed.
//
// A side table (Config.Samples) keeps every source apart for comparison:
// the shim's bytes and peak, allocations and frees, NVML's per-process and
// device figures. NVML lists host pids: where none of them is the command's
// (a container without the host's pid namespace), the per-process figure is
// 0 and the device figure is every GPU's used memory.
//
// With a simulated GPU (Simulate) the command runs on the simulated
// driver's stub libcuda, on a MIG instance of a simulated node made for the
// run, and "NVML" is that instance's used memory in the simulated NVML.
package record
