// Package simgpu is a simulated MIG node. It builds an nvml.Interface out of
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
//
// # Driver root
//
// The simulated driver reports a driver version (DriverVersion, or the one
// WithDriverVersion sets, through SystemGetDriverVersion; CUDADriverVersion
// through SystemGetCudaDriverVersion) and provides the user space a driver
// installs, built from the C sources in driver/ by `make simdriver` (part of
// `make build`) into bin/simdriver (StubFiles). InstallDriver lays them out
// under a root for a version, the way a Debian-family driver install does, so
// tools that discover a driver from its root (NVIDIA's nvcdi) find it; it
// removes other versions' libraries and firmware, as an upgrade does.
// InstallDriverRoot installs DriverVersion. migpro-agent --simulate runs
// InstallDriver at start (see docs/cdi.md):
//
//	<root>/usr/lib/x86_64-linux-gnu/libcuda.so.<DriverVersion>
//	<root>/usr/lib/x86_64-linux-gnu/libcuda.so.1 -> libcuda.so.<DriverVersion>
//	<root>/usr/lib/x86_64-linux-gnu/libcuda.so -> libcuda.so.1
//	<root>/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<DriverVersion> (+ .so.1, .so links)
//	<root>/usr/bin/nvidia-smi
//	<root>/lib/firmware/nvidia/<DriverVersion>/gsp_ga10x.bin, gsp_tu10x.bin (empty)
//
// libcuda is a stub CUDA driver: cuInit, cuDriverGetVersion, cuDeviceGet*,
// contexts (cuCtxCreate_v2/Destroy_v2/SetCurrent/GetCurrent, primary context
// retain/release), cuMemGetInfo_v2, cuMemAlloc_v2, cuMemAllocPitch_v2,
// cuMemAllocManaged, cuMemAllocAsync(_ptsz), cuMemAllocFromPoolAsync(_ptsz),
// cuMemFree_v2, cuMemFreeAsync(_ptsz), cuMemCreate/cuMemRelease,
// cuMemGetAddressRange_v2 and cuGetProcAddress(_v2). Its device memory is
// address space only. It refuses what the driver refuses: calls before
// cuInit (NOT_INITIALIZED), allocations without a current context
// (INVALID_CONTEXT), zero sizes and unknown pointers or handles
// (INVALID_VALUE), more than the instance's free memory (OUT_OF_MEMORY), and
// ordinals other than 0 (INVALID_DEVICE). nvidia-smi answers -L (the GPU line
// and the visible MIG device, in the real format) and
// --query-gpu=name,memory.total,memory.used,uuid,driver_version with
// --format=csv[,noheader][,nounits]; its memory figures are the instance's
// (the real tool reports the whole GPU there), its driver version the one
// the simulated NVML reports (the instance description carries it). libnvidia-ml answers the
// version calls only: the simulated NVML proper is this package, in the
// agent's process.
//
// Which instance: a stub process uses the first MIG UUID in
// NVIDIA_VISIBLE_DEVICES, else in CUDA_VISIBLE_DEVICES, which migpro's CDI
// spec and device plugin set to the instance's MIG UUID. With none, cuInit
// fails with CUDA_ERROR_NO_DEVICE and nvidia-smi says "No devices were
// found".
//
// The channel between the stubs and the simulated NVML is the driver's state
// directory, <root>/run/migpro-simgpu (StateDirName), which containers see at
// /run/migpro-simgpu (ContainerStateDir; the spec mounts it read-write) and
// other processes name with MIGPRO_SIMGPU_STATE:
//
//	instances/<MIG-UUID>      written by this package with each compute
//	                          instance (removed with it): key=value lines
//	                          (uuid, gpu_uuid, gpu_name, profile, gpu_index, gi,
//	                          ci, sm_count, cc_major, cc_minor, memory_total)
//	usage/<MIG-UUID>/p-<pid>-<unique>
//	                          one per process that allocated: the bytes it
//	                          holds, 8 bytes little-endian
//
// A process creates its usage file on its first allocation (a fork child
// makes its own: contexts do not survive fork), holds a shared flock on it
// for life, and rewrites the value under an OFD record lock on each
// allocation and free. Readers take the same record lock to read. A file
// whose shared flock is gone belongs to an exited process: readers skip it
// and this package removes it, so memory a process held is released when it
// dies, kill -9 included, as the driver does. Admission (the OUT_OF_MEMORY
// check) sums all live files under an exclusive flock on
// usage/<MIG-UUID>/.lock, so two processes cannot both take the last bytes.
// A MIG device's used memory in the simulated NVML is the level a test set,
// plus its processes (AddProcess), plus the sum of the live usage files of
// its compute instances.
//
// # Durable state
//
// A real driver keeps MIG instances when the agent dies; the simulated one
// keeps them in memory, so a node that must outlive its process (an agent
// run with --simulate that may be killed and restarted) is given a state
// file with WithStateFile. New then loads the file if it exists, and saves
// the state after every successful change: GPU and compute instance
// creates and destroys, MIG mode, SetInstanceMemoryUsed, AddProcess and
// RemoveProcess. The file (State, JSON, version StateVersion) holds each
// GPU's MIG mode, its instances with ids, profiles, placements and MIG
// UUIDs, each GI's memory level and processes, and each GPU's MIG UUID
// generator position, so UUIDs after a restart continue the sequence and
// never repeat one. Saves write a temp file beside it, fsync it and rename
// it over the old one, so a crash leaves the old state or the new one; a
// load deletes temp files a crash left. A change that cannot be saved is
// undone and fails (NVML calls with ERROR_UNKNOWN), since an instance a
// crash would lose must not be handed out. A file saved by another spec or
// seed, or a damaged one, is an error naming the file; a loaded file must
// also pass the driver's own admission rules. Capability files under the
// root are made for loaded instances, and ones of instances the file does
// not hold are removed.
//
// Injected faults (FailNth), latency (SetLatency), NVML init counts and
// event sets are not kept: they belong to a process, not to the hardware.
//
// One process writes a state file: the one running the node, normally the
// agent. New takes a POSIX record lock on "<file>.lock", which the kernel
// releases when that process dies (kill -9 too); a second process gets an
// error naming the holder's pid. Locks are per process, so a test may
// abandon a node and open the file again in the same process, as a
// restarted agent would. Other processes (tests, migctl) read with
// ReadStateFile, which never writes or locks; to change memory use or
// processes of a running agent's node they go through the agent's API.
package simgpu
