/*
 * Measures the shim's overhead per cuMemAlloc_v2/cuMemFree_v2 pair (256
 * bytes) in one run: blocks through the interposed symbols (shim, then stub)
 * alternate with blocks calling the stub's functions directly, as handed
 * out by its test-only stub_entry (the shim interposes dlsym and
 * cuGetProcAddress, so those would return its wrappers). Interleaving and taking
 * each side's fastest block keeps other load on the machine out of the
 * difference. Then the same for growing allocations: each block allocates
 * GROW blocks of 256 bytes without freeing (through the shim each is a new
 * peak), and frees them afterwards, untimed, through the stub directly.
 * Prints "<stub ns/pair> <shim ns/pair> <stub ns/grow> <shim ns/grow>".
 * Usage: bench BLOCKS PAIRS_PER_BLOCK [GROW_PER_BLOCK]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef unsigned long long CUdeviceptr;
typedef int (*alloc_fn)(CUdeviceptr *, size_t);
typedef int (*free_fn)(CUdeviceptr);
int cuMemAlloc_v2(CUdeviceptr *, size_t);
int cuMemFree_v2(CUdeviceptr);
void *stub_entry(const char *);

static double run(alloc_fn a, free_fn f, long n)
{
	struct timespec t0, t1;
	CUdeviceptr p;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		if (a(&p, 256) || f(p))
			exit(1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n;
}

#define MAX_GROW 4000
static CUdeviceptr held[MAX_GROW];

static double grow(alloc_fn a, free_fn undo, long n)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		if (a(&held[i], 256))
			exit(1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (long i = 0; i < n; i++)
		if (undo(held[i]))
			exit(1);
	return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n;
}

int main(int argc, char **argv)
{
	long blocks = argc > 1 ? atol(argv[1]) : 20, n = argc > 2 ? atol(argv[2]) : 100000;
	alloc_fn sa = (alloc_fn)stub_entry("cuMemAlloc_v2");
	free_fn sf = (free_fn)stub_entry("cuMemFree_v2");
	if (sa == NULL || sf == NULL || blocks < 1 || n < 1)
		return 1;
	run(sa, sf, 1000); /* warm-up: symbol binding, socket set-up */
	run(cuMemAlloc_v2, cuMemFree_v2, 1000);
	double best_stub = 1e18, best_shim = 1e18;
	for (long b = 0; b < blocks; b++) {
		double x = run(sa, sf, n), y = run(cuMemAlloc_v2, cuMemFree_v2, n);
		if (x < best_stub)
			best_stub = x;
		if (y < best_shim)
			best_shim = y;
	}
	long g = argc > 3 ? atol(argv[3]) : 2000;
	if (g < 1 || g > MAX_GROW)
		return 1;
	double grow_stub = 1e18, grow_shim = 1e18;
	for (long b = 0; b < blocks; b++) {
		double x = grow(sa, sf, g), y = grow(cuMemAlloc_v2, sf, g);
		if (x < grow_stub)
			grow_stub = x;
		if (y < grow_shim)
			grow_shim = y;
	}
	printf("%.2f %.2f %.2f %.2f\n", best_stub, best_shim, grow_stub, grow_shim);
	return 0;
}
