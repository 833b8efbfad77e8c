/*
 * libcuda.so.<version> of the simulated driver: enough of the CUDA driver
 * API for a program's first steps (initialise, find the device, make a
 * context, allocate and free), on the one MIG instance the environment
 * makes visible. Device memory is address space only: pointers are handed
 * out from a private range and never dereferenceable. What the process
 * holds is published in its usage file (simstate.h), so the simulated NVML
 * reports it as the instance's used memory, as a real driver's would be.
 *
 * It refuses what the driver refuses: calls before cuInit
 * (NOT_INITIALIZED), allocations without a current context
 * (INVALID_CONTEXT), zero or over-capacity sizes (INVALID_VALUE,
 * OUT_OF_MEMORY), unknown pointers and handles (INVALID_VALUE), and bad
 * ordinals (INVALID_DEVICE).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "simstate.h"

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef unsigned long long cuuint64_t;
typedef struct sim_ctx *CUcontext;
typedef void *CUstream;
typedef void *CUmemoryPool;
typedef struct {
	char bytes[16];
} CUuuid;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_NOT_FOUND = 500,
};

struct sim_ctx {
	unsigned magic;
	int primary;
};
#define CTX_MAGIC 0x43545831u

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int inited;
static pid_t init_pid;
static struct sim_instance inst;
static struct sim_ctx primary_ctx = {CTX_MAGIC, 1};
static int primary_refs;
static __thread CUcontext current;

/* ---- live allocations: a small open-addressing table under mu ---------- */
#define TBL_BITS 16
#define TBL_SIZE (1u << TBL_BITS)
#define KEY_TOMB 1ull
struct block {
	unsigned long long key, size;
};
static struct block ptrs[TBL_SIZE], handles[TBL_SIZE];
static unsigned long long held;                           /* bytes this process holds */
static unsigned long long next_va = 0x7f0000000000ull;    /* device address space */
static unsigned long long next_handle = 0x1000;

static unsigned slot_of(unsigned long long k) { return (unsigned)((k * 0x9E3779B97F4A7C15ull) >> (64 - TBL_BITS)); }

static int tbl_put(struct block *t, unsigned long long k, unsigned long long size)
{
	for (unsigned i = 0, h = slot_of(k); i < TBL_SIZE; i++) {
		struct block *b = &t[(h + i) & (TBL_SIZE - 1)];
		if (b->key == 0 || b->key == KEY_TOMB) {
			b->key = k;
			b->size = size;
			return 0;
		}
	}
	return -1;
}

static struct block *tbl_find(struct block *t, unsigned long long k)
{
	for (unsigned i = 0, h = slot_of(k); i < TBL_SIZE; i++) {
		struct block *b = &t[(h + i) & (TBL_SIZE - 1)];
		if (b->key == 0)
			return NULL;
		if (b->key == k)
			return b;
	}
	return NULL;
}

/* A fork child holds no device memory: contexts do not survive fork. */
static void fork_reset_locked(void)
{
	if (init_pid == getpid())
		return;
	memset(ptrs, 0, sizeof ptrs);
	memset(handles, 0, sizeof handles);
	held = 0;
	primary_refs = 0;
	current = NULL;
	init_pid = getpid();
}

static CUresult ready_locked(int need_ctx)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	fork_reset_locked();
	if (need_ctx && (current == NULL || current->magic != CTX_MAGIC))
		return CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_SUCCESS;
}

/* reserve admits n more bytes against the instance's free memory (every
 * process's use, read from the usage files under the instance's lock) and
 * publishes the new total. */
static CUresult reserve_locked(unsigned long long n)
{
	int lk = sim_usage_lock(inst.uuid);
	unsigned long long used = sim_used_bytes(inst.uuid);
	CUresult r = CUDA_SUCCESS;
	if (n > inst.memory_total || used + n > inst.memory_total)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else if (sim_usage_set(inst.uuid, held + n) < 0)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else
		held += n;
	sim_usage_unlock(lk);
	return r;
}

static void release_locked(unsigned long long n)
{
	held -= n;
	sim_usage_set(inst.uuid, held);
}

static CUresult alloc_locked(CUdeviceptr *p, unsigned long long n)
{
	if (p == NULL || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = reserve_locked(n);
	if (r != CUDA_SUCCESS)
		return r;
	unsigned long long va = next_va;
	next_va += (n + 0x1fffffull) & ~0x1fffffull; /* 2 MiB aligned, never reused */
	if (tbl_put(ptrs, va, n) < 0) {
		release_locked(n);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*p = va;
	return CUDA_SUCCESS;
}

static CUresult alloc(CUdeviceptr *p, unsigned long long n)
{
	pthread_mutex_lock(&mu);
	CUresult r = ready_locked(1);
	if (r == CUDA_SUCCESS)
		r = alloc_locked(p, n);
	pthread_mutex_unlock(&mu);
	return r;
}

static CUresult free_ptr(CUdeviceptr p)
{
	pthread_mutex_lock(&mu);
	CUresult r = ready_locked(1);
	if (r == CUDA_SUCCESS && p != 0) {
		struct block *b = tbl_find(ptrs, p);
		if (b == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			release_locked(b->size);
			b->key = KEY_TOMB;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

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

/* ---- memory ------------------------------------------------------------ */
EXPORT CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
	if (free_b == NULL || total_b == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult r = ready_locked(1);
	pthread_mutex_unlock(&mu);
	if (r != CUDA_SUCCESS)
		return r;
	unsigned long long used = sim_used_bytes(inst.uuid);
	*total_b = inst.memory_total;
	*free_b = used < inst.memory_total ? inst.memory_total - used : 0;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return alloc(p, n); }

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned int elem)
{
	if (pitch == NULL || w == 0 || h == 0 || (elem != 4 && elem != 8 && elem != 16))
		return CUDA_ERROR_INVALID_VALUE;
	size_t pt = (w + 511) & ~(size_t)511; /* rows padded to 512 bytes */
	CUresult r = alloc(p, (unsigned long long)pt * h);
	if (r == CUDA_SUCCESS)
		*pitch = pt;
	return r;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
	if (flags != 1 && flags != 2) /* CU_MEM_ATTACH_GLOBAL or _HOST */
		return CUDA_ERROR_INVALID_VALUE;
	return alloc(p, n);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
	(void)s;
	return alloc(p, n);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s) { return cuMemAllocAsync(p, n, s); }

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
	(void)s;
	if (pool == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc(p, n);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
	return cuMemAllocFromPoolAsync(p, n, pool, s);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { return free_ptr(p); }

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	(void)s;
	return free_ptr(p);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return free_ptr(p); (void)s; }

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	pthread_mutex_lock(&mu);
	CUresult r = ready_locked(1);
	if (r == CUDA_SUCCESS) {
		struct block *b = tbl_find(ptrs, p); /* exact bases only */
		if (b == NULL) {
			r = CUDA_ERROR_NOT_FOUND;
		} else {
			if (base != NULL)
				*base = p;
			if (size != NULL)
				*size = b->size;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

#define GRANULARITY (2ull << 20)

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const void *prop, unsigned long long flags)
{
	if (h == NULL || prop == NULL || flags != 0 || n == 0 || n % GRANULARITY != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult r = ready_locked(1);
	if (r == CUDA_SUCCESS)
		r = reserve_locked(n);
	if (r == CUDA_SUCCESS) {
		unsigned long long k = next_handle++;
		if (tbl_put(handles, k, n) < 0) {
			release_locked(n);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			*h = k;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	pthread_mutex_lock(&mu);
	CUresult r = ready_locked(1);
	if (r == CUDA_SUCCESS) {
		struct block *b = tbl_find(handles, h);
		if (b == NULL) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			release_locked(b->size);
			b->key = KEY_TOMB;
		}
	}
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
