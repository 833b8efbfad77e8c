/* suidalloc: loads the driver by path (argv[1]) and allocates once, for a
 * setgid run, where the loader ignores rpaths and LD_LIBRARY_PATH. */
#include <dlfcn.h>
#include <stdio.h>

typedef unsigned long long CUdeviceptr;

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (h == NULL) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	int (*alloc)(CUdeviceptr *, size_t) = (int (*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
	CUdeviceptr p;
	if (alloc == NULL || alloc(&p, 4096) != 0)
		return 1;
	puts("ok");
	return 0;
}
