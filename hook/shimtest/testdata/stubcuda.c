/*
 * A stand-in libcuda.so for tests: exports the driver calls the shim
 * intercepts and fakes device memory with host memory. Each block carries a
 * 16-byte header with its size so cuMemGetAddressRange_v2 can answer.
 * STUB_TOTAL_BYTES sets what cuMemGetInfo_v2 reports as total.
 */
#include <stdlib.h>
#include <string.h>

struct procaddr_map {
	const char *name;
	void *fn;
};

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;

enum { OK = 0, ERR_INVALID_VALUE = 1, ERR_OUT_OF_MEMORY = 2 };

static unsigned long long used;

static CUresult alloc(CUdeviceptr *p, size_t n)
{
	if (p == NULL)
		return ERR_INVALID_VALUE;
	unsigned long long *h = malloc(n + 16);
	if (h == NULL)
		return ERR_OUT_OF_MEMORY;
	h[0] = n;
	h[1] = 0x5354554243554441ull; /* "STUBCUDA": catches bad frees */
	__atomic_add_fetch(&used, n, __ATOMIC_RELAXED);
	*p = (CUdeviceptr)(h + 2);
	return OK;
}

static CUresult release(CUdeviceptr p)
{
	if (p == 0)
		return ERR_INVALID_VALUE;
	unsigned long long *h = (unsigned long long *)p - 2;
	if (h[1] != 0x5354554243554441ull)
		return ERR_INVALID_VALUE;
	h[1] = 0;
	__atomic_sub_fetch(&used, h[0], __ATOMIC_RELAXED);
	free(h);
	return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return alloc(p, n); }
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags) { (void)flags; return alloc(p, n); }
CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, void *stream) { (void)stream; return alloc(p, n); }
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, void *pool, void *stream)
{
	(void)pool;
	(void)stream;
	return alloc(p, n);
}
/* Pitch: rows padded to 256 bytes, as tests expect. */
CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned int elem)
{
	(void)elem;
	*pitch = (w + 255) & ~(size_t)255;
	return alloc(p, *pitch * h);
}
CUresult cuMemFree_v2(CUdeviceptr p) { return release(p); }
CUresult cuMemFreeAsync(CUdeviceptr p, void *stream) { (void)stream; return release(p); }
CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const void *prop, unsigned long long flags)
{
	(void)prop;
	(void)flags;
	return alloc((CUdeviceptr *)h, n);
}
CUresult cuMemRelease(CUmemGenericAllocationHandle h) { return release((CUdeviceptr)h); }
CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
	const char *t = getenv("STUB_TOTAL_BYTES");
	size_t total = t ? strtoull(t, NULL, 10) : (size_t)10 << 30;
	*total_b = total;
	*free_b = total - __atomic_load_n(&used, __ATOMIC_RELAXED);
	return OK;
}
CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	unsigned long long *h = (unsigned long long *)p - 2;
	if (p == 0 || h[1] != 0x5354554243554441ull)
		return ERR_INVALID_VALUE;
	*base = p;
	*size = h[0];
	return OK;
}

/* Per-thread default stream variants: distinct entry points, as in the real
 * driver, so the shim must keep them apart. */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, void *stream) { (void)stream; return alloc(p, n); }
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, void *pool, void *stream)
{
	(void)pool;
	(void)stream;
	return alloc(p, n);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, void *stream) { (void)stream; return release(p); }

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, unsigned long long flags, int *status);

/* cuGetProcAddress: base names to entry points, like the driver. */
CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, unsigned long long flags)
{
	int ptsz = (flags & 2) != 0;
	const struct procaddr_map m[] = {
		{"cuMemAlloc", (void *)cuMemAlloc_v2},
		{"cuMemAllocPitch", (void *)cuMemAllocPitch_v2},
		{"cuMemAllocManaged", (void *)cuMemAllocManaged},
		{"cuMemAllocAsync", ptsz ? (void *)cuMemAllocAsync_ptsz : (void *)cuMemAllocAsync},
		{"cuMemAllocFromPoolAsync", ptsz ? (void *)cuMemAllocFromPoolAsync_ptsz : (void *)cuMemAllocFromPoolAsync},
		{"cuMemFree", (void *)cuMemFree_v2},
		{"cuMemFreeAsync", ptsz ? (void *)cuMemFreeAsync_ptsz : (void *)cuMemFreeAsync},
		{"cuMemCreate", (void *)cuMemCreate},
		{"cuMemRelease", (void *)cuMemRelease},
		{"cuMemGetInfo", (void *)cuMemGetInfo_v2},
		{"cuMemGetAddressRange", (void *)cuMemGetAddressRange_v2},
		{"cuGetProcAddress", ver >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress},
	};
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
		if (strcmp(sym, m[i].name) == 0) {
			*pfn = m[i].fn;
			return OK;
		}
	}
	*pfn = NULL;
	return 500; /* CUDA_ERROR_NOT_FOUND */
}

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, unsigned long long flags, int *status)
{
	CUresult r = cuGetProcAddress(sym, pfn, ver, flags);
	if (status != NULL)
		*status = r == OK ? 0 : 1;
	return r;
}

/* Test-only: the stub's own entry points, found without any lookup the shim
 * interposes, so benchmarks can call the stub alone in the same process. */
void *stub_entry(const char *name)
{
	if (strcmp(name, "cuMemAlloc_v2") == 0)
		return (void *)cuMemAlloc_v2;
	if (strcmp(name, "cuMemFree_v2") == 0)
		return (void *)cuMemFree_v2;
	return NULL;
}
