/* weakcuda: asks "is the CUDA driver there?" the way a program that does not
 * need it does: weak references, NULL unless something defines the names.
 * Prints "yes" or "no" for cuMemAlloc_v2, cuMemFree_v2 and cuGetProcAddress;
 * when the first two are there it also allocates and frees 4096 bytes
 * through them and prints both results ("yes yes yes 0 0"). Built with and
 * without -lcuda. */
#include <stddef.h>
#include <stdio.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

extern CUresult cuMemAlloc_v2(CUdeviceptr *, size_t) __attribute__((weak));
extern CUresult cuMemFree_v2(CUdeviceptr) __attribute__((weak));
extern CUresult cuGetProcAddress(const char *, void **, int, unsigned long long) __attribute__((weak));

int main(void)
{
	printf("%s %s %s", cuMemAlloc_v2 ? "yes" : "no", cuMemFree_v2 ? "yes" : "no", cuGetProcAddress ? "yes" : "no");
	if (cuMemAlloc_v2 && cuMemFree_v2) {
		CUdeviceptr p = 0;
		CUresult a = cuMemAlloc_v2(&p, 4096);
		printf(" %d %d", a, a == 0 ? cuMemFree_v2(p) : -1);
	}
	printf("\n");
	return 0;
}
