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
#include <string.h>
#include <unistd.h>

#include "cuda.h"

pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
int inited;
pid_t init_pid;
struct sim_instance inst;
struct sim_ctx primary_ctx = {CTX_MAGIC, 1};
int primary_refs;
__thread CUcontext current;

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

CUresult ready_locked(int need_ctx)
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

