/*
 * Allocates through libcuda on a scripted pattern, one step per argument:
 *   alloc:N managed:N async:N pool:N create:N   allocate N bytes
 *   pitch:W:H                                   pitched W x H (stub pads rows to 256)
 *   free:I                                      free the I-th allocation (0-based) with its kind's free call
 *   info                                        cuMemGetInfo_v2
 *   sleep:MS                                    pause
 *   mark                                        prints "mark" and flushes stdout
 *   errno:N                                     sets errno to EDOM, allocates N and prints
 *                                               "errno E" with errno after the call
 *   threads:T:K:N                               T threads, each K alloc/free pairs of N bytes
 *   grow:N:C:MS                                 C allocations of N bytes, MS ms apart; after each
 *                                               prints "grow I/C live=BYTES" (live: all held bytes)
 *   fork:N                                      a child allocates N, frees it, allocates N/2
 *                                               and exits (normally); prints "child PID"
 *   forkthreads:T:K:N:F                         T threads of K alloc/free pairs of N bytes
 *                                               while the main thread forks F such children
 *   hijack:PORT                                 closes every fd above 2, connects to
 *                                               127.0.0.1:PORT and dup2s the connection onto
 *                                               each number that held a socket; prints
 *                                               "sockets N first FD cloexec C"
 * Exits 1 with a message on any driver error.
 *
 * PATTERN_VIA picks how the driver is reached, as real programs do:
 *   link (default)  calls the symbols linked from libcuda
 *   dlsym           dlsym(dlopen("libcuda.so.1"), "cuMemAlloc_v2") and so on
 *   procaddress     cuGetProcAddress_v2 from that handle, as the CUDA runtime
 *                   does (stream-ordered calls in their per-thread variant)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
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


static struct {
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*managed)(CUdeviceptr *, size_t, unsigned int);
	CUresult (*async)(CUdeviceptr *, size_t, void *);
	CUresult (*pool)(CUdeviceptr *, size_t, void *, void *);
	CUresult (*pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
	CUresult (*free)(CUdeviceptr);
	CUresult (*free_async)(CUdeviceptr, void *);
	CUresult (*create)(unsigned long long *, size_t, const void *, unsigned long long);
	CUresult (*release)(unsigned long long);
	CUresult (*info)(size_t *, size_t *);
} api = {cuMemAlloc_v2, cuMemAllocManaged, cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemAllocPitch_v2,
	 cuMemFree_v2, cuMemFreeAsync, cuMemCreate, cuMemRelease, cuMemGetInfo_v2};

static void *need(void *p, const char *what)
{
	if (p == NULL) {
		fprintf(stderr, "cannot resolve %s\n", what);
		exit(1);
	}
	return p;
}

static void resolve(const char *via)
{
	if (via == NULL || strcmp(via, "link") == 0)
		return;
	void *h = need(dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), "libcuda.so.1");
	if (strcmp(via, "dlsym") == 0) {
		*(void **)&api.alloc = need(dlsym(h, "cuMemAlloc_v2"), "cuMemAlloc_v2");
		*(void **)&api.managed = need(dlsym(h, "cuMemAllocManaged"), "cuMemAllocManaged");
		*(void **)&api.async = need(dlsym(h, "cuMemAllocAsync"), "cuMemAllocAsync");
		*(void **)&api.pool = need(dlsym(h, "cuMemAllocFromPoolAsync"), "cuMemAllocFromPoolAsync");
		*(void **)&api.pitch = need(dlsym(h, "cuMemAllocPitch_v2"), "cuMemAllocPitch_v2");
		*(void **)&api.free = need(dlsym(h, "cuMemFree_v2"), "cuMemFree_v2");
		*(void **)&api.free_async = need(dlsym(h, "cuMemFreeAsync"), "cuMemFreeAsync");
		*(void **)&api.create = need(dlsym(h, "cuMemCreate"), "cuMemCreate");
		*(void **)&api.release = need(dlsym(h, "cuMemRelease"), "cuMemRelease");
		*(void **)&api.info = need(dlsym(h, "cuMemGetInfo_v2"), "cuMemGetInfo_v2");
		return;
	}
	if (strcmp(via, "procaddress") != 0) {
		fprintf(stderr, "PATTERN_VIA=%s: want link, dlsym or procaddress\n", via);
		exit(2);
	}
	CUresult (*gpa)(const char *, void **, int, unsigned long long, int *);
	*(void **)&gpa = need(dlsym(h, "cuGetProcAddress_v2"), "cuGetProcAddress_v2");
	const struct {
		const char *name;
		void **slot;
		unsigned long long flags;
	} want[] = {
		{"cuMemAlloc", (void **)&api.alloc, 0},
		{"cuMemAllocManaged", (void **)&api.managed, 0},
		{"cuMemAllocAsync", (void **)&api.async, 2},
		{"cuMemAllocFromPoolAsync", (void **)&api.pool, 2},
		{"cuMemAllocPitch", (void **)&api.pitch, 0},
		{"cuMemFree", (void **)&api.free, 0},
		{"cuMemFreeAsync", (void **)&api.free_async, 2},
		{"cuMemCreate", (void **)&api.create, 0},
		{"cuMemRelease", (void **)&api.release, 0},
		{"cuMemGetInfo", (void **)&api.info, 0},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		if (gpa(want[i].name, want[i].slot, 12040, want[i].flags, NULL) != 0 || *want[i].slot == NULL)
			need(NULL, want[i].name);
}

#define MAXA 4096
static CUdeviceptr ptrs[MAXA];
static char kinds[MAXA];
static unsigned long long sizes[MAXA];
static unsigned long long live;
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

static void keep(CUdeviceptr p, char kind, unsigned long long n)
{
	if (nptr == MAXA) {
		fprintf(stderr, "too many allocations\n");
		exit(1);
	}
	ptrs[nptr] = p;
	sizes[nptr] = n;
	kinds[nptr++] = kind;
	live += n;
}

static void pause_ms(unsigned long long ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
	struct job *j = arg;
	for (long i = 0; i < j->k; i++) {
		CUdeviceptr p;
		check(api.alloc(&p, j->n), "thread alloc");
		check(api.free(p), "thread free");
	}
	return NULL;
}

static pid_t fork_child(size_t n)
{
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		CUdeviceptr p;
		check(api.alloc(&p, n), "child alloc");
		check(api.free(p), "child free");
		check(api.alloc(&p, n / 2), "child alloc");
		exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child %d failed: status %d\n", (int)pid, st);
		exit(1);
	}
}

static void hijack(int port)
{
	int first = -1, n = 0, cloexec = 0, is_sock[4096] = {0};
	for (int fd = 3; fd < 4096; fd++) {
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) {
			is_sock[fd] = 1;
			if (first < 0) {
				first = fd;
				cloexec = (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0;
			}
			n++;
		}
		close(fd);
	}
	int c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof sa) < 0) {
		perror("connect");
		exit(1);
	}
	for (int fd = 3; fd < 4096; fd++)
		if (is_sock[fd] && fd != c && dup2(c, fd) < 0) {
			perror("dup2");
			exit(1);
		}
	printf("sockets %d first %d cloexec %d\n", n, first, cloexec);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	resolve(getenv("PATTERN_VIA"));
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		unsigned long long x = 0, y = 0, z = 0, w = 0;
		CUdeviceptr p = 0;
		char kind = 0;
		if (sscanf(a, "grow:%llu:%llu:%llu", &x, &y, &z) == 3) {
			for (unsigned long long k = 1; k <= y; k++) {
				if (k > 1)
					pause_ms(z);
				check(api.alloc(&p, x), a);
				keep(p, 'a', x);
				printf("grow %llu/%llu live=%llu\n", k, y, live);
				fflush(stdout);
			}
		} else if (sscanf(a, "alloc:%llu", &x) == 1) {
			check(api.alloc(&p, x), a), kind = 'a';
		} else if (sscanf(a, "managed:%llu", &x) == 1) {
			check(api.managed(&p, x, 1), a), kind = 'a';
		} else if (sscanf(a, "async:%llu", &x) == 1) {
			check(api.async(&p, x, NULL), a), kind = 's';
		} else if (sscanf(a, "pool:%llu", &x) == 1) {
			check(api.pool(&p, x, NULL, NULL), a), kind = 's';
		} else if (sscanf(a, "create:%llu", &x) == 1) {
			check(api.create(&p, x, NULL, 0), a), kind = 'c';
		} else if (sscanf(a, "pitch:%llu:%llu", &x, &y) == 2) {
			size_t pitch;
			check(api.pitch(&p, &pitch, x, y, 4), a), kind = 'a';
			x = pitch * y;
		} else if (sscanf(a, "free:%llu", &x) == 1) {
			if (x >= (unsigned long long)nptr || kinds[x] == 0) {
				fprintf(stderr, "%s: no such live allocation\n", a);
				return 1;
			}
			if (kinds[x] == 'a')
				check(api.free(ptrs[x]), a);
			else if (kinds[x] == 's')
				check(api.free_async(ptrs[x], NULL), a);
			else
				check(api.release(ptrs[x]), a);
			kinds[x] = 0;
			live -= sizes[x];
		} else if (strcmp(a, "info") == 0) {
			size_t f, t;
			check(api.info(&f, &t), a);
		} else if (sscanf(a, "forkthreads:%llu:%llu:%llu:%llu", &x, &y, &z, &w) == 4) {
			pthread_t th[64];
			struct job j = {(long)y, (size_t)z};
			if (x > 64)
				x = 64;
			for (unsigned long long t = 0; t < x; t++)
				pthread_create(&th[t], NULL, worker, &j);
			for (unsigned long long f = 0; f < w; f++)
				reap(fork_child((size_t)z));
			for (unsigned long long t = 0; t < x; t++)
				pthread_join(th[t], NULL);
		} else if (sscanf(a, "fork:%llu", &x) == 1) {
			pid_t pid = fork_child((size_t)x);
			printf("child %d\n", (int)pid);
			fflush(stdout);
			reap(pid);
		} else if (sscanf(a, "hijack:%llu", &x) == 1) {
			hijack((int)x);
		} else if (sscanf(a, "errno:%llu", &x) == 1) {
			errno = EDOM;
			check(api.alloc(&p, x), a), kind = 'a';
			printf("errno %d\n", errno);
			fflush(stdout);
		} else if (strcmp(a, "mark") == 0) {
			printf("mark\n");
			fflush(stdout);
		} else if (sscanf(a, "sleep:%llu", &x) == 1) {
			pause_ms(x);
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
		if (kind)
			keep(p, kind, x);
	}
	return 0;
}
