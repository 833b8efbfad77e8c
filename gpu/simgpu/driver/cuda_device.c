/*
 * The stub libcuda's initialisation, devices, contexts, error names and
 * cuGetProcAddress (see cuda.c for what the library is).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cuda.h"

/* ---- initialisation and devices --------------------------------------- */
EXPORT CUresult cuInit(unsigned int flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult r = CUDA_SUCCESS;
	if (!inited) {
		if (sim_find_instance(&inst) == 0) {
			inited = 1;
			init_pid = getpid();
		} else {
			r = CUDA_ERROR_NO_DEVICE;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
	if (v == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*v = SIM_CUDA_VERSION;
	return CUDA_SUCCESS;
}

static CUresult check_dev(CUdevice d)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
	if (n == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	*n = 1;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	if (d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_dev(ordinal);
	if (r == CUDA_SUCCESS)
		*d = 0;
	return r;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
	if (name == NULL || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_dev(d);
	if (r == CUDA_SUCCESS)
		snprintf(name, (size_t)len, "%s MIG %s", inst.gpu_name, inst.profile);
	return r;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
	if (bytes == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_dev(d);
	if (r == CUDA_SUCCESS)
		*bytes = inst.memory_total;
	return r;
}

/* The attributes programs ask first; others are INVALID_VALUE. */
EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	if (v == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_dev(d);
	if (r != CUDA_SUCCESS)
		return r;
	switch (attr) {
	case 1: /* MAX_THREADS_PER_BLOCK */
		*v = 1024;
		break;
	case 10: /* WARP_SIZE */
		*v = 32;
		break;
	case 16: /* MULTIPROCESSOR_COUNT */
		*v = inst.sm_count;
		break;
	case 75: /* COMPUTE_CAPABILITY_MAJOR */
		*v = inst.cc_major;
		break;
	case 76: /* COMPUTE_CAPABILITY_MINOR */
		*v = inst.cc_minor;
		break;
	case 83: /* MANAGED_MEMORY */
	case 115: /* MEMORY_POOLS_SUPPORTED */
	case 102: /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
		*v = 1;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d)
{
	if (u == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_dev(d);
	if (r != CUDA_SUCCESS)
		return r;
	/* The MIG UUID's 32 hex digits, dashes skipped. */
	int n = 0, hi = -1;
	for (const char *s = inst.uuid + 4; *s != '\0' && n < 16; s++) {
		int x = hexval(*s);
		if (x < 0)
			continue;
		if (hi < 0) {
			hi = x;
		} else {
			u->bytes[n++] = (char)(hi << 4 | x);
			hi = -1;
		}
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) { return cuDeviceGetUuid(u, d); }

/* ---- contexts ---------------------------------------------------------- */
EXPORT CUresult cuCtxCreate_v2(CUcontext *c, unsigned int flags, CUdevice d)
{
	(void)flags;
	if (c == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_dev(d);
	if (r != CUDA_SUCCESS)
		return r;
	static struct sim_ctx ctxs[64];
	static unsigned used_ctx;
	pthread_mutex_lock(&mu);
	struct sim_ctx *x = NULL;
	for (unsigned i = 0; i < 64 && x == NULL; i++)
		if (ctxs[(used_ctx + i) % 64].magic != CTX_MAGIC)
			x = &ctxs[(used_ctx + i) % 64];
	if (x != NULL) {
		x->magic = CTX_MAGIC;
		x->primary = 0;
		used_ctx++;
		current = x;
		*c = x;
	}
	pthread_mutex_unlock(&mu);
	return x != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext c)
{
	if (c == NULL || c->magic != CTX_MAGIC || c->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	c->magic = 0;
	if (current == c)
		current = NULL;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (c != NULL && c->magic != CTX_MAGIC)
		return CUDA_ERROR_INVALID_CONTEXT;
	current = c;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c)
{
	if (c == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	*c = current;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	if (c == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = check_dev(d);
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&mu);
	primary_refs++;
	pthread_mutex_unlock(&mu);
	*c = &primary_ctx;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	CUresult r = check_dev(d);
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&mu);
	if (primary_refs == 0)
		r = CUDA_ERROR_INVALID_CONTEXT;
	else
		primary_refs--;
	pthread_mutex_unlock(&mu);
	return r;
}

/* ---- errors and lookup -------------------------------------------------- */
EXPORT CUresult cuGetErrorName(CUresult e, const char **s)
{
	if (s == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	switch (e) {
	case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
	case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case CUDA_ERROR_NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
	case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
	case CUDA_ERROR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
	case CUDA_ERROR_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
	case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
	default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **s) { return cuGetErrorName(e, s); }

static const struct {
	const char *name; /* the base name cuGetProcAddress is asked for */
	void *fn;
	int ptsz; /* the per-thread-default-stream flavour */
} procs[] = {
	{"cuInit", (void *)cuInit, 0},
	{"cuDriverGetVersion", (void *)cuDriverGetVersion, 0},
	{"cuDeviceGet", (void *)cuDeviceGet, 0},
	{"cuDeviceGetCount", (void *)cuDeviceGetCount, 0},
	{"cuDeviceGetName", (void *)cuDeviceGetName, 0},
	{"cuDeviceTotalMem", (void *)cuDeviceTotalMem_v2, 0},
	{"cuDeviceGetAttribute", (void *)cuDeviceGetAttribute, 0},
	{"cuDeviceGetUuid", (void *)cuDeviceGetUuid_v2, 0},
	{"cuCtxCreate", (void *)cuCtxCreate_v2, 0},
	{"cuCtxDestroy", (void *)cuCtxDestroy_v2, 0},
	{"cuCtxSetCurrent", (void *)cuCtxSetCurrent, 0},
	{"cuCtxGetCurrent", (void *)cuCtxGetCurrent, 0},
	{"cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain, 0},
	{"cuDevicePrimaryCtxRelease", (void *)cuDevicePrimaryCtxRelease_v2, 0},
	{"cuMemGetInfo", (void *)cuMemGetInfo_v2, 0},
	{"cuMemAlloc", (void *)cuMemAlloc_v2, 0},
	{"cuMemAllocPitch", (void *)cuMemAllocPitch_v2, 0},
	{"cuMemAllocManaged", (void *)cuMemAllocManaged, 0},
	{"cuMemAllocAsync", (void *)cuMemAllocAsync, 0},
	{"cuMemAllocAsync", (void *)cuMemAllocAsync_ptsz, 1},
	{"cuMemAllocFromPoolAsync", (void *)cuMemAllocFromPoolAsync, 0},
	{"cuMemAllocFromPoolAsync", (void *)cuMemAllocFromPoolAsync_ptsz, 1},
	{"cuMemFree", (void *)cuMemFree_v2, 0},
	{"cuMemFreeAsync", (void *)cuMemFreeAsync, 0},
	{"cuMemFreeAsync", (void *)cuMemFreeAsync_ptsz, 1},
	{"cuMemGetAddressRange", (void *)cuMemGetAddressRange_v2, 0},
	{"cuMemCreate", (void *)cuMemCreate, 0},
	{"cuMemRelease", (void *)cuMemRelease, 0},
	{"cuGetErrorName", (void *)cuGetErrorName, 0},
	{"cuGetErrorString", (void *)cuGetErrorString, 0},
};

#define PER_THREAD_DEFAULT_STREAM 2ull

static CUresult lookup(const char *sym, void **pfn, cuuint64_t flags);

EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags, int *status)
{
	(void)ver;
	CUresult r = lookup(sym, pfn, flags);
	if (status != NULL)
		*status = r == CUDA_SUCCESS ? 0 : 1; /* FOUND / SYMBOL_NOT_FOUND */
	return r;
}

EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
	(void)ver;
	return lookup(sym, pfn, flags);
}

static CUresult lookup(const char *sym, void **pfn, cuuint64_t flags)
{
	if (sym == NULL || pfn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	int want_ptsz = (flags & PER_THREAD_DEFAULT_STREAM) != 0;
	void *any = NULL;
	if (strcmp(sym, "cuGetProcAddress") == 0) {
		*pfn = (void *)cuGetProcAddress_v2;
		return CUDA_SUCCESS;
	}
	for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
		if (strcmp(sym, procs[i].name) != 0)
			continue;
		if (procs[i].ptsz == want_ptsz) {
			*pfn = procs[i].fn;
			return CUDA_SUCCESS;
		}
		if (any == NULL)
			any = procs[i].fn;
	}
	*pfn = any;
	return any != NULL ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
