/*
 * libmigpro-shim: an LD_PRELOAD library that counts the CUDA driver's memory
 * allocations of one process and reports them to the migpro agent over the
 * container's own unix datagram socket.
 *
 * Rules it keeps, and why:
 *  - libc only, so it loads in any glibc container image (libdl.so.2 may
 *    be missing: see resolve.c).
 *  - No heap allocation and no locks on the hot path: sizes live in a fixed,
 *    lock-free open-addressing table; counters are atomics.
 *  - Never blocks the caller: sends are MSG_DONTWAIT on an unconnected
 *    SOCK_DGRAM socket; a failed send is only counted ("dropped"). The one
 *    exception is the exit sample, which nothing can follow: when the
 *    agent's queue is full it is retried for at most EXIT_RETRY_MS, in
 *    1 ms sleeps, from the exiting process's destructor.
 *  - Processes that never touch CUDA (the shell, coreutils...) pay nothing
 *    but the preload itself: all set-up is lazy, and they send nothing.
 *  - Never touches the program's descriptors: its socket sits on a high,
 *    close-on-exec fd, and is checked to still be its own socket (device and
 *    inode) before each send; when the program closed it or reused the
 *    number, the shim opens a new one and leaves that fd alone.
 *  - At most one sample per interval, new peaks included: a peak reached
 *    inside the interval goes out, flagged, with the next sample, and the
 *    exit sample always carries the final peak.
 *  - Safe across fork and threads: a fork child starts from zero under its
 *    own pid (a pthread_atfork handler, registered when the shim loads, so
 *    it is in place even for a fork during another thread's first set-up),
 *    never inherits a half-done set-up, and threads share lock-free counters.
 *  - Inert in setuid programs (AT_SECURE), which read no environment.
 *
 * Wire format (v1, 80 bytes, little-endian) is described in docs/hook.md and
 * decoded by telemetry/wire.go.
 *
 * Environment:
 *  MIGPRO_TELEMETRY_SOCKET       socket path (default /run/migpro/telemetry.sock)
 *  MIGPRO_TELEMETRY_INTERVAL_MS  minimum gap between periodic samples (default 100)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"


#define WIRE_SIZE 80
#define WIRE_MAGIC 0x3150474du /* "MGP1" */
#define WIRE_VERSION 1
#define FLAG_PEAK 1u
#define FLAG_EXIT 2u
/* How long an exiting process waits for room in a full agent queue. */
#define EXIT_RETRY_MS 100

/* ---- atomics (GCC builtins: no libatomic needed for 64-bit on x86-64/arm64) */
#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
#define SUB(p, v) __atomic_sub_fetch((p), (v), __ATOMIC_RELAXED)
#define CAS(p, expp, v) \
	__atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)

#include "table.h"

/* ---- counters -----------------------------------------------------------
 * current and peak are global atomics: every allocation must see the sum to
 * detect a new peak. The allocation and free counts are only read when a
 * sample is sent, so each thread keeps its own in a block claimed once from a
 * static array and bumps it with plain (unlocked) stores; the sender sums the
 * blocks. Threads beyond the array share one block with atomic adds. */
static unsigned long long cur_bytes, peak_bytes, total_mem;
static unsigned long long seq, last_send_ns;
static int pending_peak; /* a peak not yet reported */
static unsigned int dropped;

struct tcount {
	unsigned long long allocs, frees;
};
#define MAX_THREADS 1024
static struct tcount tcounts[MAX_THREADS];
static struct tcount shared_tc;
static unsigned n_tcounts;
static __thread struct tcount *my_tc __attribute__((tls_model("initial-exec")));

static inline struct tcount *thread_counts(void)
{
	struct tcount *t = my_tc;
	if (__builtin_expect(t == NULL, 0)) {
		unsigned i = __atomic_fetch_add(&n_tcounts, 1, __ATOMIC_RELAXED);
		t = i < MAX_THREADS ? &tcounts[i] : &shared_tc;
		my_tc = t;
	}
	return t;
}

static inline void bump(unsigned long long *c)
{
	if (__builtin_expect(c >= &shared_tc.allocs && c <= &shared_tc.frees, 0))
		ADD(c, 1);
	else
		STORE(c, LOAD(c) + 1);
}

static void sum_counts(unsigned long long *allocs, unsigned long long *frees)
{
	unsigned n = LOAD(&n_tcounts);
	unsigned long long a = LOAD(&shared_tc.allocs), f = LOAD(&shared_tc.frees);
	if (n > MAX_THREADS)
		n = MAX_THREADS;
	for (unsigned i = 0; i < n; i++) {
		a += LOAD(&tcounts[i].allocs);
		f += LOAD(&tcounts[i].frees);
	}
	*allocs = a;
	*frees = f;
}

static inline unsigned long long now_ns(void)
{
	struct timespec ts;
	/* The coarse clock is a vDSO read without a TSC access: cheap enough
	 * for every call, and its few-ms resolution is plenty for a 100 ms
	 * interval. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static inline void put32(unsigned char *b, unsigned v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static inline void put64(unsigned char *b, unsigned long long v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static void shim_reset_counters(void)
{
	STORE(&cur_bytes, 0);
	STORE(&peak_bytes, 0);
	for (unsigned i = 0; i < MAX_THREADS; i++)
		tcounts[i] = (struct tcount){0, 0};
	shared_tc = (struct tcount){0, 0};
	STORE(&seq, 0);
	STORE(&last_send_ns, 0);
	STORE(&pending_peak, 0);
	STORE(&dropped, 0);
	/* The parent's live pointers are not the child's: its frees of
	 * recycled addresses must not find the parent's sizes. Only a process
	 * that allocated touched the tables. */
	if (LOAD(&n_tcounts) != 0) {
		memset(ptr_tbl, 0, sizeof ptr_tbl);
		memset(handle_tbl, 0, sizeof handle_tbl);
	}
}

/* The fork child runs this alone: its counters start from zero (the CUDA
 * context does not survive fork, so the parent's bytes are not its own). */
static void atfork_child(void)
{
	shim_sock_after_fork();
	shim_reset_counters();
}

/* Registered at load, before any thread can be inside shim_init: a child
 * forked while another thread does the first set-up gets the handler, and
 * redoes the set-up instead of waiting forever for a thread it lacks. */
__attribute__((constructor)) static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static void send_sample_raw(unsigned flags)
{
	shim_init();
	int fd = shim_socket();
	if (fd == -2)
		return; /* no usable socket path */
	if (fd < 0) {
		ADD(&dropped, 1);
		return;
	}
	pid_t pid = shim_owner_pid;
	unsigned char m[WIRE_SIZE];
	unsigned long long s = ADD(&seq, 1);
	unsigned long long cur = LOAD(&cur_bytes), peak = LOAD(&peak_bytes);
	unsigned long long al, fr;
	sum_counts(&al, &fr);
	/* Counters move independently; keep the datagram self-consistent so
	 * the agent's checks (peak >= current, frees <= allocs) hold. */
	if (peak < cur)
		peak = cur;
	if (fr > al)
		fr = al;
	put32(m + 0, WIRE_MAGIC);
	m[4] = WIRE_VERSION;
	m[5] = 0;
	m[6] = (unsigned char)flags;
	m[7] = 0;
	put32(m + 8, (unsigned)pid);
	put32(m + 12, __atomic_exchange_n(&dropped, 0, __ATOMIC_RELAXED));
	put64(m + 16, s);
	put64(m + 24, now_ns());
	put64(m + 32, cur);
	put64(m + 40, peak);
	put64(m + 48, al);
	put64(m + 56, fr);
	put64(m + 64, LOAD(&total_mem));
	put64(m + 72, 0);
	int r = shim_sendto(fd, m, sizeof m);
	/* A full queue (the agent is behind, or starved of CPU) answers
	 * EAGAIN. The exit sample carries the process's final counters and
	 * its peak, and nothing comes after it: wait a little for room. */
	for (int i = 0; r < 0 && errno == EAGAIN && (flags & FLAG_EXIT) && i < EXIT_RETRY_MS; i++) {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
		r = shim_sendto(fd, m, sizeof m);
	}
	if (r < 0)
		ADD(&dropped, 1);
}

/* send_sample keeps the program's errno: a failed send (no agent, a full
 * queue) must not show through the intercepted call. */
static void send_sample(unsigned flags)
{
	int saved = errno;
	send_sample_raw(flags);
	errno = saved;
}

/* maybe_send sends when the interval since the last sample has passed (one
 * thread wins the CAS and sends). A new peak inside the interval is only
 * marked; the next sample carries it and its flag. */
static inline void maybe_send(int new_peak)
{
	if (new_peak && !LOAD(&pending_peak))
		STORE(&pending_peak, 1);
	unsigned long long now = now_ns(), last = LOAD(&last_send_ns);
	if (now - last < shim_interval_ns)
		return;
	if (!CAS(&last_send_ns, &last, now))
		return;
	unsigned flags = __atomic_exchange_n(&pending_peak, 0, __ATOMIC_RELAXED) ? FLAG_PEAK : 0;
	send_sample(flags);
}

static void account_alloc(unsigned long long n)
{
	unsigned long long cur = ADD(&cur_bytes, n), peak = LOAD(&peak_bytes);
	int new_peak = 0;
	bump(&thread_counts()->allocs);
	while (cur > peak) {
		if (CAS(&peak_bytes, &peak, cur)) {
			new_peak = 1;
			break;
		}
	}
	maybe_send(new_peak);
}

static void account_free(unsigned long long n)
{
	SUB(&cur_bytes, n);
	bump(&thread_counts()->frees);
	maybe_send(0);
}

/* ---- the wrappers ------------------------------------------------------ */
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
typedef CUresult (*managed_fn)(CUdeviceptr *, size_t, unsigned int);
typedef CUresult (*async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*info_fn)(size_t *, size_t *);
typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);

/* track records a live allocation under its pointer or handle. A full table
 * leaves it out; its free then asks the driver (pointers) or counts nothing
 * (handles). */
static void track(struct slot *t, unsigned bits, unsigned long long key, unsigned long long n)
{
	if (__builtin_expect(LOAD(&shim_init_state) != 2, 0))
		shim_init(); /* before any count: the fork handler must be in place */
	tbl_put(t, bits, key, n);
	account_alloc(n);
}

static void track_ptr(CUdeviceptr p, unsigned long long n)
{
	track(ptr_tbl, PTR_BITS, p, n);
}

/* forget_ptr runs before the real free, while the driver can still tell the
 * size of an allocation the table could not hold. */
static unsigned long long forget_ptr(CUdeviceptr p, int *known)
{
	unsigned long long n = 0;
	*known = tbl_take(ptr_tbl, PTR_BITS, p, &n);
	if (!*known) {
		range_fn range = (range_fn)shim_real(S_RANGE);
		CUdeviceptr base;
		size_t sz;
		if (range != NULL && range(&base, &sz, p) == CUDA_SUCCESS && base == p)
			n = sz;
	}
	return n;
}

static CUresult finish_free(struct slot *t, unsigned bits, CUresult r, unsigned long long key, unsigned long long n, int known)
{
	if (r == CUDA_SUCCESS)
		account_free(n);
	else if (known)
		tbl_put(t, bits, key, n); /* the free failed: still live */
	return r;
}

CUresult shim_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	alloc_fn f = (alloc_fn)shim_real(S_ALLOC);
	if (f == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r = f(dptr, bytesize);
	if (r == CUDA_SUCCESS)
		track_ptr(*dptr, bytesize);
	return r;
}

CUresult shim_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned int elem)
{
	pitch_fn f = (pitch_fn)shim_real(S_PITCH);
	if (f == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r = f(dptr, pitch, width, height, elem);
	if (r == CUDA_SUCCESS)
		track_ptr(*dptr, (unsigned long long)*pitch * height);
	return r;
}

CUresult shim_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	managed_fn f = (managed_fn)shim_real(S_MANAGED);
	if (f == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r = f(dptr, bytesize, flags);
	if (r == CUDA_SUCCESS)
		track_ptr(*dptr, bytesize);
	return r;
}

static CUresult alloc_async(enum slot_id slot, CUdeviceptr *dptr, size_t bytesize, CUstream stream)
{
	async_fn f = (async_fn)shim_real(slot);
	if (f == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r = f(dptr, bytesize, stream);
	if (r == CUDA_SUCCESS)
		track_ptr(*dptr, bytesize);
	return r;
}

CUresult shim_cuMemAllocAsync(CUdeviceptr *dptr, size_t n, CUstream stream)
{
	return alloc_async(S_ASYNC, dptr, n, stream);
}

CUresult shim_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t n, CUstream stream)
{
	return alloc_async(S_ASYNC_PTSZ, dptr, n, stream);
}

static CUresult alloc_pool(enum slot_id slot, CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream stream)
{
	pool_fn f = (pool_fn)shim_real(slot);
	if (f == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r = f(dptr, bytesize, pool, stream);
	if (r == CUDA_SUCCESS)
		track_ptr(*dptr, bytesize);
	return r;
}

CUresult shim_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream stream)
{
	return alloc_pool(S_POOL, dptr, n, pool, stream);
}

CUresult shim_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream stream)
{
	return alloc_pool(S_POOL_PTSZ, dptr, n, pool, stream);
}

CUresult shim_cuMemFree_v2(CUdeviceptr p)
{
	free_fn f = (free_fn)shim_real(S_FREE);
	if (f == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	int known;
	unsigned long long n = forget_ptr(p, &known);
	return finish_free(ptr_tbl, PTR_BITS, f(p), p, n, known);
}

static CUresult free_async(enum slot_id slot, CUdeviceptr p, CUstream stream)
{
	free_async_fn f = (free_async_fn)shim_real(slot);
	if (f == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	int known;
	unsigned long long n = forget_ptr(p, &known);
	/* Counted at enqueue time: the program no longer holds it. */
	return finish_free(ptr_tbl, PTR_BITS, f(p, stream), p, n, known);
}

CUresult shim_cuMemFreeAsync(CUdeviceptr p, CUstream stream)
{
	return free_async(S_FREE_ASYNC, p, stream);
}

CUresult shim_cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream stream)
{
	return free_async(S_FREE_ASYNC_PTSZ, p, stream);
}

CUresult shim_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags)
{
	create_fn f = (create_fn)shim_real(S_CREATE);
	if (f == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r = f(handle, size, prop, flags);
	if (r == CUDA_SUCCESS)
		track(handle_tbl, HANDLE_BITS, *handle, size);
	return r;
}

CUresult shim_cuMemRelease(CUmemGenericAllocationHandle handle)
{
	release_fn f = (release_fn)shim_real(S_RELEASE);
	if (f == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	unsigned long long n = 0;
	int known = tbl_take(handle_tbl, HANDLE_BITS, handle, &n);
	return finish_free(handle_tbl, HANDLE_BITS, f(handle), handle, n, known);
}

CUresult shim_cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
	info_fn f = (info_fn)shim_real(S_INFO);
	if (f == NULL)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r = f(free_b, total_b);
	if (r == CUDA_SUCCESS && total_b != NULL)
		STORE(&total_mem, (unsigned long long)*total_b);
	/* Frameworks poll this between steps: a natural point for a periodic
	 * sample even when nothing was allocated. */
	if (LOAD(&peak_bytes) != 0)
		maybe_send(0);
	return r;
}

/* The last word: the agent learns this process is gone, and its exact final
 * counters. Only processes that allocated say anything. */
__attribute__((destructor)) static void migpro_shim_fini(void)
{
	unsigned long long al, fr;
	sum_counts(&al, &fr);
	if (LOAD(&shim_init_state) == 2 && al != 0)
		send_sample(FLAG_EXIT | (LOAD(&pending_peak) ? FLAG_PEAK : 0));
}
