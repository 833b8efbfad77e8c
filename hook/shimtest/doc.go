// Package shimtest builds the telemetry shim and its test fixtures with the
// system gcc: the shim itself (hook/shim), a stub libcuda.so.1 that fakes
// device memory with host memory, a program that allocates on a scripted
// pattern, and an overhead benchmark. Tests here and in e2e use it so plain
// `go test` needs nothing prebuilt.
package shimtest
