/*
 * A CUDA program with no CUDA toolkit: it dlopens libcuda.so.1, looks up
 * the driver API with dlsym, and runs the steps given as arguments, printing
 * one line per step ("<step> <result-code> [detail]"):
 *   init ctx primary info name total
 *   count uuid attr:A           device count, MIG-formatted UUID, attribute A
 *   destroy                     destroy the context the last ctx step made
 *   proc:NAME:SYM               cuGetProcAddress(NAME) against dlsym(SYM):
 *                               "same" or "differs"
 *   alloc:N pitch:W:H managed:N async:N pool:N create:N
 *   free:I freeasync:I release:I (I = index of an earlier allocation step)
 *   pause                       print "paused", wait for a line on stdin
 *   nofree                      exit without freeing anything left
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*fn_i)(unsigned);
static void *lib;

static void *sym(const char *name)
{
	void *f = dlsym(lib, name);
	if (f == NULL) {
		printf("missing %s\n", name);
		exit(3);
	}
	return f;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		printf("dlopen %s\n", dlerror());
		return 2;
	}
	int (*cuInit)(unsigned) = sym("cuInit");
	int (*cuDeviceGet)(int *, int) = sym("cuDeviceGet");
	int (*cuDeviceGetName)(char *, int, int) = sym("cuDeviceGetName");
	int (*cuDeviceTotalMem)(size_t *, int) = sym("cuDeviceTotalMem_v2");
	int (*cuCtxCreate)(void **, unsigned, int) = sym("cuCtxCreate_v2");
	int (*cuCtxSetCurrent)(void *) = sym("cuCtxSetCurrent");
	int (*cuPrimaryRetain)(void **, int) = sym("cuDevicePrimaryCtxRetain");
	int (*cuMemGetInfo)(size_t *, size_t *) = sym("cuMemGetInfo_v2");
	int (*cuMemAlloc)(unsigned long long *, size_t) = sym("cuMemAlloc_v2");
	int (*cuMemAllocPitch)(unsigned long long *, size_t *, size_t, size_t, unsigned) = sym("cuMemAllocPitch_v2");
	int (*cuMemAllocManaged)(unsigned long long *, size_t, unsigned) = sym("cuMemAllocManaged");
	int (*cuMemAllocAsync)(unsigned long long *, size_t, void *) = sym("cuMemAllocAsync");
	int (*cuMemAllocFromPoolAsync)(unsigned long long *, size_t, void *, void *) = sym("cuMemAllocFromPoolAsync");
	int (*cuMemFree)(unsigned long long) = sym("cuMemFree_v2");
	int (*cuMemCreate)(unsigned long long *, size_t, const void *, unsigned long long) = sym("cuMemCreate");
	int (*cuMemRelease)(unsigned long long) = sym("cuMemRelease");
	int (*cuMemFreeAsync)(unsigned long long, void *) = sym("cuMemFreeAsync");
	int (*cuDeviceGetCount)(int *) = sym("cuDeviceGetCount");
	int (*cuDeviceGetAttribute)(int *, int, int) = sym("cuDeviceGetAttribute");
	int (*cuDeviceGetUuid)(unsigned char *, int) = sym("cuDeviceGetUuid");
	int (*cuCtxDestroy)(void *) = sym("cuCtxDestroy_v2");
	int (*cuGetProcAddress)(const char *, void **, int, unsigned long long) = sym("cuGetProcAddress");
	void *lastctx = NULL;
	unsigned long long ptr[256] = {0};
	int dev = 0;
	for (int i = 1; i < argc && i < 256; i++) {
		char *a = argv[i];
		unsigned long long x = 0, y = 0;
		int r = 0;
		char detail[256] = "";
		if (strcmp(a, "init") == 0) {
			r = cuInit(0);
		} else if (strcmp(a, "ctx") == 0) {
			void *c;
			if ((r = cuDeviceGet(&dev, 0)) == 0 && (r = cuCtxCreate(&c, 0, dev)) == 0)
				lastctx = c;
		} else if (strcmp(a, "destroy") == 0) {
			r = cuCtxDestroy(lastctx);
		} else if (strcmp(a, "count") == 0) {
			int n = -1;
			r = cuDeviceGetCount(&n);
			snprintf(detail, sizeof detail, "%d", n);
		} else if (strcmp(a, "uuid") == 0) {
			unsigned char u[16] = {0};
			r = cuDeviceGetUuid(u, dev);
			char *o = detail + sprintf(detail, "MIG-");
			for (int k = 0; k < 16; k++)
				o += sprintf(o, "%s%02x", (k == 4 || k == 6 || k == 8 || k == 10) ? "-" : "", u[k]);
		} else if (sscanf(a, "attr:%llu", &x) == 1) {
			int v = -1;
			r = cuDeviceGetAttribute(&v, (int)x, dev);
			snprintf(detail, sizeof detail, "%d", v);
		} else if (strncmp(a, "proc:", 5) == 0) {
			char name[128] = "", want[128] = "";
			void *f = NULL;
			if (sscanf(a, "proc:%127[^:]:%127s", name, want) != 2) {
				printf("bad step %s\n", a);
				return 2;
			}
			r = cuGetProcAddress(name, &f, 12040, 0);
			snprintf(detail, sizeof detail, "%s", f != NULL && f == dlsym(lib, want) ? "same" : "differs");
		} else if (strcmp(a, "primary") == 0) {
			void *c;
			if ((r = cuPrimaryRetain(&c, 0)) == 0)
				r = cuCtxSetCurrent(c);
		} else if (strcmp(a, "name") == 0) {
			r = cuDeviceGetName(detail, sizeof detail, 0);
		} else if (strcmp(a, "total") == 0) {
			size_t t = 0;
			r = cuDeviceTotalMem(&t, 0);
			snprintf(detail, sizeof detail, "%zu", t);
		} else if (strcmp(a, "info") == 0) {
			size_t f = 0, t = 0;
			r = cuMemGetInfo(&f, &t);
			snprintf(detail, sizeof detail, "%zu %zu", f, t);
		} else if (sscanf(a, "alloc:%llu", &x) == 1) {
			r = cuMemAlloc(&ptr[i], x);
		} else if (sscanf(a, "pitch:%llu:%llu", &x, &y) == 2) {
			size_t p = 0;
			r = cuMemAllocPitch(&ptr[i], &p, x, y, 4);
			snprintf(detail, sizeof detail, "%zu", p);
		} else if (sscanf(a, "managed:%llu", &x) == 1) {
			r = cuMemAllocManaged(&ptr[i], x, 1);
		} else if (sscanf(a, "async:%llu", &x) == 1) {
			r = cuMemAllocAsync(&ptr[i], x, NULL);
		} else if (sscanf(a, "pool:%llu", &x) == 1) {
			r = cuMemAllocFromPoolAsync(&ptr[i], x, (void *)1, NULL);
		} else if (sscanf(a, "create:%llu", &x) == 1) {
			char prop[64] = {0};
			r = cuMemCreate(&ptr[i], x, prop, 0);
		} else if (sscanf(a, "free:%llu", &x) == 1) {
			r = cuMemFree(x < 256 ? ptr[x] : x);
		} else if (sscanf(a, "freeasync:%llu", &x) == 1) {
			r = cuMemFreeAsync(x < 256 ? ptr[x] : x, NULL);
		} else if (sscanf(a, "release:%llu", &x) == 1) {
			r = cuMemRelease(x < 256 ? ptr[x] : x);
		} else if (strcmp(a, "pause") == 0) {
			char line[16];
			printf("paused\n");
			if (fgets(line, sizeof line, stdin) == NULL)
				return 0;
			continue;
		} else if (strcmp(a, "nofree") == 0) {
			_exit(0);
		} else {
			printf("bad step %s\n", a);
			return 2;
		}
		printf("%s %d%s%s\n", a, r, detail[0] ? " " : "", detail);
	}
	return 0;
}
