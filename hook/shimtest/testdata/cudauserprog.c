/* cudauserprog: runs libcudauser.so's cudauser_run(1000). Built with
 * -DLINKED it is linked against the library (and so, through it, against
 * libcuda); without, it is linked against neither and dlopen()s the library
 * (which brings libcuda with it) when it runs. Prints "ok". */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

#ifdef LINKED
int cudauser_run(size_t n);
#endif

int main(void)
{
#ifdef LINKED
	int (*run)(size_t) = cudauser_run;
#else
	void *h = dlopen("libcudauser.so", RTLD_NOW);
	if (h == NULL) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	int (*run)(size_t) = (int (*)(size_t))dlsym(h, "cudauser_run");
	if (run == NULL) {
		fprintf(stderr, "no cudauser_run\n");
		return 1;
	}
#endif
	if (run(1000) != 0) {
		fprintf(stderr, "a driver call failed\n");
		return 1;
	}
	printf("ok\n");
	return 0;
}
