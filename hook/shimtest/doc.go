// Package shimtest builds the telemetry shim and its test fixtures with the
// system gcc: the shim itself (hook/shim), a stub libcuda.so.1 that fakes
// device memory with host memory, a program that allocates on a scripted
// pattern (threads, forks and an fd hijack included), a library chaining
// dlsym(RTLD_NEXT) with its program, and an overhead benchmark. Tests here
// and in e2e use it so plain `go test` needs nothing prebuilt.
//
// Its tests also run the shim in a rootfs with the oldest glibc the Debian
// archive offers here, made by setup/oldglibc-rootfs.sh (cached in
// /var/cache/migpro-shimtest/oldglibc, or $MIGPRO_OLDGLIBC_DIR), and
// against the simulated driver's stub libcuda (gpu/simgpu), checking the
// shim's bytes against the simulated NVML's.
package shimtest
