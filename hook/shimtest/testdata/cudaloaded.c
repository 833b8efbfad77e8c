/* cudaloaded: asks "is the CUDA driver loaded?" the ways programs do (the
 * global scope, RTLD_NEXT from the program, the program's own handle from
 * dlopen(NULL)), before and after loading it (argv[1]); prints
 * "no no no yes yes yes" when the answers are right. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

static void ask(void *self, const char *name)
{
	printf("%s %s %s", dlsym(RTLD_DEFAULT, name) ? "yes" : "no", dlsym(RTLD_NEXT, name) ? "yes" : "no",
	       dlsym(self, name) ? "yes" : "no");
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	void *self = dlopen(NULL, RTLD_NOW);
	if (self == NULL) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	ask(self, "cuMemAlloc_v2");
	if (dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == NULL) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	printf(" ");
	ask(self, "cuMemAlloc_v2");
	printf("\n");
	return 0;
}
