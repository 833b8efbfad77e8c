/*
 * Shared declarations of libmigpro-shim: the driver types it needs (no CUDA
 * headers at build time), the slots holding the real driver entry points,
 * and the wrappers that replace them.
 */
#ifndef MIGPRO_SHIM_H
#define MIGPRO_SHIM_H

#include <stddef.h>
#include <sys/types.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef unsigned long long cuuint64_t;
typedef void *CUstream;
typedef void *CUmemoryPool;
typedef struct CUmemAllocationProp_st CUmemAllocationProp;

enum { CUDA_SUCCESS = 0, CUDA_ERROR_NOT_INITIALIZED = 3, CUDA_ERROR_NOT_FOUND = 500 };

/* One slot per real entry point. The *_PTSZ slots are the per-thread
 * default stream variants of the stream-ordered calls. */
enum slot_id {
	S_ALLOC,
	S_PITCH,
	S_MANAGED,
	S_ASYNC,
	S_ASYNC_PTSZ,
	S_POOL,
	S_POOL_PTSZ,
	S_FREE,
	S_FREE_ASYNC,
	S_FREE_ASYNC_PTSZ,
	S_CREATE,
	S_RELEASE,
	S_INFO,
	S_RANGE, /* only ever called, never wrapped */
	S_GPA,   /* cuGetProcAddress */
	S_GPA2,  /* cuGetProcAddress_v2 */
	S_COUNT
};

/* shim_real returns the real entry point of a slot, resolving it with
 * dlsym(RTLD_NEXT) the first time, or NULL when there is none. */
void *shim_real(enum slot_id s);

/* Set-up and socket (sock.c). shim_init is idempotent and thread-safe;
 * shim_init_state is 2 once it is done. shim_socket returns the fd to send
 * on, reopening the socket when the program closed the shim's fd or put
 * something else on its number: -1 when none is usable now, -2 when the
 * socket path is unusable. */
extern int shim_init_state;
extern unsigned long long shim_interval_ns;
extern pid_t shim_owner_pid;
void shim_init(void);
int shim_socket(void);
int shim_sendto(int fd, const void *m, size_t n);

/* shim_sock_after_fork resets sock.c's state in a fork child; the fork
 * handler (migpro_shim.c, registered when the shim loads) calls it. sock.c
 * calls nothing of migpro_shim.c. */
void shim_sock_after_fork(void);

/* The wrappers (migpro_shim.c). */
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocPitch_v2(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
CUresult cuMemAllocManaged(CUdeviceptr *, size_t, unsigned int);
CUresult cuMemAllocAsync(CUdeviceptr *, size_t, CUstream);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *, size_t, CUstream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
CUresult cuMemCreate(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
CUresult cuMemRelease(CUmemGenericAllocationHandle);
CUresult cuMemGetInfo_v2(size_t *, size_t *);

/* The resolver's wrappers (resolve.c). */
CUresult cuGetProcAddress(const char *, void **, int, cuuint64_t);
CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, void *);

#endif
