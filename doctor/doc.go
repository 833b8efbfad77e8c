// Package doctor checks a node's readiness for migpro, the job of `migctl
// doctor`: one result per check, each failing or warning check with its fix.
//
// It only reads. It calls NVML's query functions (never a set or create
// call), stats files, connects to sockets and asks runtimes for their
// version; no GPU setting, file or service is changed.
//
// Checks, in order: the NVIDIA driver and its version (through NVML), each
// GPU's MIG capability and current and pending MIG mode, the CDI spec
// directories, the container runtimes that would apply CDI specs
// (containerd, CRI-O, podman), the hooks the specs there name (such as
// nvidia-cdi-hook), the kubelet's device-plugin and PodResources sockets, and
// the migpro agent's socket. Without NVML the GPU checks are one failing
// line that names the library go-nvml could not load: nothing else is
// called into the library, so go-nvml's abort on an unloaded symbol cannot
// happen.
//
// The CDI spec the agent would write is doctor/cdispec's job (`migpro-lab
// cdi-spec`): it needs the cdi package and NVIDIA's container toolkit,
// which migctl does not link.
package doctor
