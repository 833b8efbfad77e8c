/*
 * Allocates through libcuda on a scripted pattern, one step per argument:
 *   alloc:N managed:N async:N pool:N create:N   allocate N bytes
 *   pitch:W:H                                   pitched W x H (stub pads rows to 256)
 *   free:I                                      free the I-th allocation (0-based) with its kind's free call
 *   info                                        cuMemGetInfo_v2
 *   sleep:MS                                    pause
 *   threads:T:K:N                               T threads, each K alloc/free pairs of N bytes
 * Exits 1 with a message on any driver error.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocManaged(CUdeviceptr *, size_t, unsigned int);
CUresult cuMemAllocAsync(CUdeviceptr *, size_t, void *);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *, size_t, void *, void *);
CUresult cuMemAllocPitch_v2(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemFreeAsync(CUdeviceptr, void *);
CUresult cuMemCreate(unsigned long long *, size_t, const void *, unsigned long long);
CUresult cuMemRelease(unsigned long long);
CUresult cuMemGetInfo_v2(size_t *, size_t *);

#define MAXA 4096
static CUdeviceptr ptrs[MAXA];
static char kinds[MAXA];
static int nptr;

static void check(CUresult r, const char *what)
{
	if (r != 0) {
		fprintf(stderr, "%s failed: %d\n", what, r);
		exit(1);
	}
}

struct job {
	long k;
	size_t n;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	for (long i = 0; i < j->k; i++) {
		CUdeviceptr p;
		check(cuMemAlloc_v2(&p, j->n), "thread alloc");
		check(cuMemFree_v2(p), "thread free");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		unsigned long long x = 0, y = 0, z = 0;
		CUdeviceptr p = 0;
		char kind = 0;
		if (sscanf(a, "alloc:%llu", &x) == 1) {
			check(cuMemAlloc_v2(&p, x), a), kind = 'a';
		} else if (sscanf(a, "managed:%llu", &x) == 1) {
			check(cuMemAllocManaged(&p, x, 1), a), kind = 'a';
		} else if (sscanf(a, "async:%llu", &x) == 1) {
			check(cuMemAllocAsync(&p, x, NULL), a), kind = 's';
		} else if (sscanf(a, "pool:%llu", &x) == 1) {
			check(cuMemAllocFromPoolAsync(&p, x, NULL, NULL), a), kind = 's';
		} else if (sscanf(a, "create:%llu", &x) == 1) {
			check(cuMemCreate(&p, x, NULL, 0), a), kind = 'c';
		} else if (sscanf(a, "pitch:%llu:%llu", &x, &y) == 2) {
			size_t pitch;
			check(cuMemAllocPitch_v2(&p, &pitch, x, y, 4), a), kind = 'a';
		} else if (sscanf(a, "free:%llu", &x) == 1) {
			if (x >= (unsigned long long)nptr || kinds[x] == 0) {
				fprintf(stderr, "%s: no such live allocation\n", a);
				return 1;
			}
			if (kinds[x] == 'a')
				check(cuMemFree_v2(ptrs[x]), a);
			else if (kinds[x] == 's')
				check(cuMemFreeAsync(ptrs[x], NULL), a);
			else
				check(cuMemRelease(ptrs[x]), a);
			kinds[x] = 0;
		} else if (strcmp(a, "info") == 0) {
			size_t f, t;
			check(cuMemGetInfo_v2(&f, &t), a);
		} else if (sscanf(a, "sleep:%llu", &x) == 1) {
			struct timespec ts = {(time_t)(x / 1000), (long)(x % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		} else if (sscanf(a, "threads:%llu:%llu:%llu", &x, &y, &z) == 3) {
			pthread_t th[64];
			struct job j = {(long)y, (size_t)z};
			if (x > 64)
				x = 64;
			for (unsigned long long t = 0; t < x; t++)
				pthread_create(&th[t], NULL, worker, &j);
			for (unsigned long long t = 0; t < x; t++)
				pthread_join(th[t], NULL);
		} else {
			fprintf(stderr, "bad step %s\n", a);
			return 2;
		}
		if (kind) {
			if (nptr == MAXA) {
				fprintf(stderr, "too many allocations\n");
				return 1;
			}
			ptrs[nptr] = p;
			kinds[nptr++] = kind;
		}
	}
	return 0;
}
