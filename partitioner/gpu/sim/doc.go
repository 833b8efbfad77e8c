// Package sim is a simulated MIG node. It builds an nvml.Interface out of
// go-nvml's mock types and the mock's per-model profile tables (corrected
// where the mock is wrong), adds the driver's refusals that the mock lacks,
// and hands that interface to the nvmlgpu adapter, so the simulated node runs
// exactly the adapter code a real node runs.
//
// Tests drive it through exported controls: MIG mode, instance memory and
// processes, Xid injection, fault injection and per-operation latency. It
// also makes the device nodes and capability files CDI specs point at, under
// a directory of its own.
package sim
