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

/* The wrappers, hidden: exports.c exports each under the driver's name
 * (cuMemAlloc_v2 for shim_cuMemAlloc_v2...) as an indirect function that
 * resolves to it only while a libcuda is mapped. Inside the shim, always use
 * these names: the exported ones may resolve to NULL. HIDDEN on the
 * declarations too, so other files take their address PC-relative, which
 * needs no relocation (exports.c's resolvers may run before the loader
 * relocated the shim). */
#define HIDDEN __attribute__((visibility("hidden")))

/* migpro_shim.c */
HIDDEN CUresult shim_cuMemAlloc_v2(CUdeviceptr *, size_t);
HIDDEN CUresult shim_cuMemAllocPitch_v2(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
HIDDEN CUresult shim_cuMemAllocManaged(CUdeviceptr *, size_t, unsigned int);
HIDDEN CUresult shim_cuMemAllocAsync(CUdeviceptr *, size_t, CUstream);
HIDDEN CUresult shim_cuMemAllocAsync_ptsz(CUdeviceptr *, size_t, CUstream);
HIDDEN CUresult shim_cuMemAllocFromPoolAsync(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
HIDDEN CUresult shim_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
HIDDEN CUresult shim_cuMemFree_v2(CUdeviceptr);
HIDDEN CUresult shim_cuMemFreeAsync(CUdeviceptr, CUstream);
HIDDEN CUresult shim_cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
HIDDEN CUresult shim_cuMemCreate(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
HIDDEN CUresult shim_cuMemRelease(CUmemGenericAllocationHandle);
HIDDEN CUresult shim_cuMemGetInfo_v2(size_t *, size_t *);

/* resolve.c */
HIDDEN CUresult shim_cuGetProcAddress(const char *, void **, int, cuuint64_t);
HIDDEN CUresult shim_cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, void *);

/* exports.c: 1 when a libcuda is mapped in the process, 0 when none is, -1
 * when it cannot tell. Safe anywhere: raw system calls only. */
HIDDEN int shim_cuda_mapped(void);

#endif
