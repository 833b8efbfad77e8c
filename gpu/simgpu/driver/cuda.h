/*
 * Shared declarations of the stub libcuda (cuda.c: state and memory;
 * cuda_device.c: initialisation, devices, contexts, errors and lookup).
 */
#ifndef MIGPRO_SIM_CUDA_H
#define MIGPRO_SIM_CUDA_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

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

/* The process's driver state, under mu (current is per thread). */
extern pthread_mutex_t mu;
extern int inited;
extern pid_t init_pid;
extern struct sim_instance inst;
extern struct sim_ctx primary_ctx;
extern int primary_refs;
extern __thread CUcontext current;

/* ready_locked checks cuInit (and a current context if need_ctx), after
 * dropping what a fork child inherited. */
CUresult ready_locked(int need_ctx);

/* The entry points cuGetProcAddress hands out (cuda.c). */
CUresult cuMemGetInfo_v2(size_t *, size_t *);
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
CUresult cuMemGetAddressRange_v2(CUdeviceptr *, size_t *, CUdeviceptr);
CUresult cuMemCreate(CUmemGenericAllocationHandle *, size_t, const void *, unsigned long long);
CUresult cuMemRelease(CUmemGenericAllocationHandle);

#endif
