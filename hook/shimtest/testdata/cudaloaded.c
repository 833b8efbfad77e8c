/* cudaloaded: asks "is the CUDA driver loaded?" the way programs do, before
 * and after loading it (argv[1]); prints "no yes" when the answers are
 * right. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	const char *before = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") ? "yes" : "no";
	if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == NULL) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	const char *after = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") ? "yes" : "no";
	printf("%s %s\n", before, after);
	return 0;
}
