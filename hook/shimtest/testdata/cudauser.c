/* libcudauser.so: a library linked against libcuda, as framework libraries
 * are. cudauser_run allocates twice and frees both: once through its PLT
 * (bound on the first call, or at load with LD_BIND_NOW) and once through a
 * function pointer in its data, which the loader binds while it relocates
 * this library, before the shim preloaded ahead of it. Returns 0 when every
 * call succeeded. */
#include <stddef.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);

/* Exported data: the compiler cannot assume it still holds cuMemAlloc_v2. */
CUresult (*cudauser_alloc)(CUdeviceptr *, size_t) = cuMemAlloc_v2;

int cudauser_run(size_t n)
{
	CUdeviceptr a = 0, b = 0;
	if (cuMemAlloc_v2(&a, n) != 0 || cudauser_alloc(&b, n) != 0)
		return 1;
	return cuMemFree_v2(a) != 0 || cuMemFree_v2(b) != 0;
}
