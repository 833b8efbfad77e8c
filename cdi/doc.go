// Package cdi writes and removes one Container Device Interface (CDI) spec per
// MIG instance, so podman, containerd and the kubelet can hand the instance to
// a container by its qualified name, e.g. "migpro.dev/mig=MIG-<uuid>".
//
// A [Writer] owns one kind (vendor/class, default "migpro.dev/mig") in one
// spec directory (default /var/run/cdi). Each instance gets its own file,
// "<vendor>-<class>_<name>.json", written atomically (temp file in the same
// directory, fsync, rename) with mode 0644, so a runtime never reads a half
// written spec. Files of other vendors or kinds in the same directory are never
// read, written or removed.
//
// A spec is composed of three parts:
//   - the driver's common edits, at spec level, from a [Driver] given with
//     [WithDriver] and read once by [NewWriter]: the control device nodes,
//     the driver's libraries, binaries, firmware and IPC sockets, and the
//     nvidia-cdi-hook hooks (create-symlinks, update-ldcache,
//     disable-device-node-modification, ...). [NVIDIADriver] makes them with
//     NVIDIA's nvcdi, driven by the caller's NVML (real or simulated);
//   - the instance's device edits: its GPU node /dev/nvidia<minor> and its
//     MIG GPU-instance and compute-instance capability nodes
//     /dev/nvidia-caps/nvidia-cap<M> (the driver's, where it can make them;
//     otherwise migpro's own, whose capability minors are read from the
//     driver's capability files and which equal nvcdi's), plus
//     NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES set to the MIG UUID.
//     Without a driver, the control nodes /dev/nvidiactl, /dev/nvidia-uvm
//     and /dev/nvidia-uvm-tools are added here. Container paths are always
//     the standard /dev ones; host paths point into the node's
//     [gpu.DriverPaths] (a simulated GPU keeps its nodes elsewhere);
//   - extra edits from the caller ([WithExtraEdits]), such as the telemetry
//     hook, the shim mount and its env.
//
// The spec's cdiVersion is always set explicitly to the lowest version its
// content needs (the library's MinimumRequiredVersion), because podman 4.3
// skips specs newer than 0.5.0. The composed content needs 0.5.0 at most:
// the driver's edits are made without additionalGids (0.7.0).
//
// Every spec is validated by the CDI library (ReadSpec of the temp file, the
// way a runtime reads it) before it is renamed into place: bad input produces
// an error and no file.
package cdi
