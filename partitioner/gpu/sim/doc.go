// Package sim is a simulated MIG node. It builds an nvml.Interface out of
// go-nvml's mock types and the mock's per-model profile tables, adds the
// driver's refusals the mock lacks, and hands that interface to the nvmlgpu
// adapter, so a simulated node runs exactly the adapter code a real one runs.
//
// Models (Models, ParseSpec, ModelProfiles): a30-24gb, a100-40gb, a100-80gb,
// h100-80gb and h200-141gb. The mock's tables are used where they are right.
// Its Hopper placements are replaced (3g is {0,4}:4, 7g is {0}:8, 1g
// double-memory is {0,2,4,6}:2), and its H200 1g and 3g/4g memory sizes are
// lowered to what makes go-nvlib derive the real names (1g.18gb, 3g.71gb).
//
// What the simulated driver refuses, with NVML's codes:
//   - creating a GI while MIG mode is off: NOT_SUPPORTED;
//   - a profile the GPU lacks, or a placement not in its legal list:
//     INVALID_ARGUMENT;
//   - a placement overlapping an existing GI, more GIs of a profile than its
//     instance count, more compute slices than the GPU has, or a second
//     compute instance on a GI its first one already fills:
//     INSUFFICIENT_RESOURCES;
//   - destroying a GI that still has a compute instance, or a CI or GI with
//     processes: IN_USE;
//   - unknown GI or CI ids: NOT_FOUND; stale handles: INVALID_ARGUMENT.
//
// Ids and UUIDs follow the driver's habits: GI ids are the lowest free from
// 1, CI ids the lowest free from 0 within their GI, and listings come sorted.
// GPU and MIG UUIDs are derived from the seed (WithSeed, default DefaultSeed)
// and each GPU's own history, so equal seeds and equal operations give equal
// UUIDs however operations on different GPUs interleave.
//
// Tests drive the node through its controls: SetMIGMode, SetInstanceMemoryUsed,
// AddProcess/RemoveProcess (an instance's reported use is the level set plus
// its processes' use), InjectXid, FailNth and SetLatency. Creates and
// destroys on one GPU are serialised, and latency is slept outside the state
// lock, so polling stays fast while a slow reconfiguration runs.
//
// With WithRoot the node makes, under its root, dev/nvidiactl, nvidia-uvm,
// nvidia-uvm-tools, nvidia<N> and nvidia-caps/nvidia-cap<M>, and the
// capability files proc/driver/nvidia/capabilities/gpu<N>/mig/gi<G>[/ci<C>]/access
// (created with each GI and CI, removed with it). Capability minors follow the
// driver's mig-minors layout. Device nodes are character devices on majors no
// loaded driver owns (195 for nvidia, spare majors for uvm and caps); if 195
// is taken by a real NVIDIA driver they get /dev/null's numbers instead, so a
// container can never reach a real GPU through a simulated spec, and without
// mknod permission they are empty files (see NodeKind).
package sim
