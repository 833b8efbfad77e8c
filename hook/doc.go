// Package hook is the OCI hook: it registers a starting container with the
// agent and injects the telemetry shim, the container's own telemetry
// socket, and a preload list naming the shim after the image's own entries
// (/etc/ld.so.preload, so the image's LD_PRELOAD is kept) into the
// container's mount namespace.
//
// The hook runs as root next to the runtime and reads data shaped by the
// container image, so it trusts nothing from the container: every path inside
// the rootfs is resolved with filepath-securejoin's pathrs-lite (scoped to the
// rootfs, race-free) and must resolve exactly where it should, mounts are
// attached by file descriptor with the new mount API, nothing from the rootfs
// is ever executed, and the hook links no C (see cmd/migpro-hook) so a
// container-controlled LD_PRELOAD can never reach it. See docs/hook.md.
package hook
