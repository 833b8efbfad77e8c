// Package simdrivertest builds the simulated driver's user-space stubs
// (gpu/simgpu/driver: libcuda, libnvidia-ml, nvidia-smi) and a test CUDA
// program that dlopens libcuda.so.1, for tests that run real processes
// against a simulated node.
package simdrivertest
