/*
 * Finding the real driver entry points, and handing out the shim's wrappers
 * however a program looks the driver up.
 *
 * LD_PRELOAD only interposes lookups in the global scope. Two common paths
 * bypass it, and both are covered here:
 *  - dlsym(handle, "cuMemAlloc_v2") on a handle from dlopen("libcuda.so.1"):
 *    the shim interposes dlsym itself. For the names it wraps it records the
 *    real pointer and returns the wrapper; everything else passes through,
 *    and RTLD_NEXT / RTLD_DEFAULT lookups keep their caller (see dlsym).
 *  - cuGetProcAddress / cuGetProcAddress_v2, which the CUDA runtime (11.3+)
 *    uses for every driver call: the shim wraps them and swaps in its
 *    wrappers for the base names it counts.
 * A slot holds one real pointer. If a lookup returns a different one for a
 * slot already filled (another driver copy, say), the real pointer is handed
 * out unwrapped: those calls go uncounted, never to the wrong function.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "shim.h"

static const char *const slot_name[S_COUNT] = {
	[S_ALLOC] = "cuMemAlloc_v2",
	[S_PITCH] = "cuMemAllocPitch_v2",
	[S_MANAGED] = "cuMemAllocManaged",
	[S_ASYNC] = "cuMemAllocAsync",
	[S_ASYNC_PTSZ] = "cuMemAllocAsync_ptsz",
	[S_POOL] = "cuMemAllocFromPoolAsync",
	[S_POOL_PTSZ] = "cuMemAllocFromPoolAsync_ptsz",
	[S_FREE] = "cuMemFree_v2",
	[S_FREE_ASYNC] = "cuMemFreeAsync",
	[S_FREE_ASYNC_PTSZ] = "cuMemFreeAsync_ptsz",
	[S_CREATE] = "cuMemCreate",
	[S_RELEASE] = "cuMemRelease",
	[S_INFO] = "cuMemGetInfo_v2",
	[S_RANGE] = "cuMemGetAddressRange_v2",
	[S_GPA] = "cuGetProcAddress",
	[S_GPA2] = "cuGetProcAddress_v2",
};

static void *const slot_wrapper[S_COUNT] = {
	[S_ALLOC] = (void *)shim_cuMemAlloc_v2,
	[S_PITCH] = (void *)shim_cuMemAllocPitch_v2,
	[S_MANAGED] = (void *)shim_cuMemAllocManaged,
	[S_ASYNC] = (void *)shim_cuMemAllocAsync,
	[S_ASYNC_PTSZ] = (void *)shim_cuMemAllocAsync_ptsz,
	[S_POOL] = (void *)shim_cuMemAllocFromPoolAsync,
	[S_POOL_PTSZ] = (void *)shim_cuMemAllocFromPoolAsync_ptsz,
	[S_FREE] = (void *)shim_cuMemFree_v2,
	[S_FREE_ASYNC] = (void *)shim_cuMemFreeAsync,
	[S_FREE_ASYNC_PTSZ] = (void *)shim_cuMemFreeAsync_ptsz,
	[S_CREATE] = (void *)shim_cuMemCreate,
	[S_RELEASE] = (void *)shim_cuMemRelease,
	[S_INFO] = (void *)shim_cuMemGetInfo_v2,
	[S_RANGE] = NULL,
	[S_GPA] = (void *)shim_cuGetProcAddress,
	[S_GPA2] = (void *)shim_cuGetProcAddress_v2,
};

static void *slot_real[S_COUNT];

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym_fn;

/* The glibc floor: glibc 2.34 moved dlsym and dlvsym into libc under a new
 * version, GLIBC_2.34, which a default link records and older glibc lacks.
 * Every glibc still exports them under the architecture's base version (in
 * libdl.so.2 before 2.34, as compat symbols of libc.so.6 since), so the shim
 * binds dlvsym to that version.
 *
 * The shim depends on libc.so.6 alone: an image may have no libdl.so.2, and
 * a preloaded library whose dependency is missing stops every dynamic
 * program of the container (exit 127). So dlvsym is a weak reference: since
 * glibc 2.34 libc provides it; before, libdl.so.2 does when the program
 * loaded it (every program that calls dlsym or dlopen did), and otherwise
 * it is NULL and the shim stays out of the way (no wrapper finds a real
 * entry point, so nothing is counted and nothing changes). */
#if defined(__x86_64__)
#define GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define GLIBC_BASE "GLIBC_2.17"
#else
#error "set GLIBC_BASE, the first glibc symbol version of this architecture"
#endif
#pragma weak dlvsym
__asm__(".symver dlvsym, dlvsym@" GLIBC_BASE);

/* real_dlsym finds glibc's dlsym by version, since plain dlsym is now the
 * shim's own. */
static dlsym_fn real_dlsym(void)
{
	dlsym_fn f = __atomic_load_n(&real_dlsym_fn, __ATOMIC_ACQUIRE);
	if (f != NULL)
		return f;
	if (dlvsym == NULL)
		return NULL; /* glibc before 2.34 and no libdl.so.2 loaded */
	f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", GLIBC_BASE);
	__atomic_store_n(&real_dlsym_fn, f, __ATOMIC_RELEASE);
	return f;
}

typedef void *(*dlopen_fn)(const char *, int);
static void *local_driver;

/* local_sym finds name in a libcuda that is loaded but outside the global
 * scope: a library linked against libcuda and dlopen()ed without
 * RTLD_GLOBAL (as Python loads extension modules) brings it in privately.
 * That library's calls still bind to the shim's exports (the global scope
 * is searched first), so the wrappers must find the real entry points
 * there: RTLD_NOLOAD opens only what is already loaded. Asked only while a
 * libcuda is mapped, so a program without one keeps its dlerror() text. */
static void *local_sym(dlsym_fn d, const char *name)
{
	void *h = __atomic_load_n(&local_driver, __ATOMIC_ACQUIRE);
	if (h == NULL) {
		if (dlvsym == NULL || shim_cuda_mapped() != 1)
			return NULL;
		dlopen_fn o = (dlopen_fn)dlvsym(RTLD_NEXT, "dlopen", GLIBC_BASE);
		if (o == NULL || (h = o("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) == NULL)
			return NULL;
		/* Kept open for good: the slots hold pointers into it. A
		 * thread racing here opens it twice, which only counts twice. */
		__atomic_store_n(&local_driver, h, __ATOMIC_RELEASE);
	}
	return d(h, name);
}

void *shim_real(enum slot_id s)
{
	void *f = __atomic_load_n(&slot_real[s], __ATOMIC_ACQUIRE);
	if (__builtin_expect(f != NULL, 1))
		return f;
	dlsym_fn d = real_dlsym();
	if (d == NULL)
		return NULL;
	/* RTLD_NEXT is relative to the caller, and the caller is this shim. */
	f = d(RTLD_NEXT, slot_name[s]);
	if (f == NULL)
		f = local_sym(d, slot_name[s]);
	if (f == NULL || f == slot_wrapper[s])
		return NULL;
	void *none = NULL;
	if (!__atomic_compare_exchange_n(&slot_real[s], &none, f, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		f = none; /* someone filled it first (maybe via a lookup): keep theirs */
	return f;
}

/* adopt records real as the slot's entry point and returns what the caller
 * should get: the wrapper, or real itself when the slot holds another
 * function. */
static void *adopt(enum slot_id s, void *real)
{
	void *w = slot_wrapper[s];
	if (real == NULL || w == NULL || real == w)
		return real;
	void *cur = NULL;
	if (__atomic_compare_exchange_n(&slot_real[s], &cur, real, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) || cur == real)
		return w;
	return real;
}

static int slot_by_name(const char *name)
{
	/* Cheap reject first: dlsym is called for everything in every process. */
	if (name == NULL || name[0] != 'c' || name[1] != 'u' || (name[2] != 'M' && name[2] != 'G'))
		return -1;
	for (int s = 0; s < S_COUNT; s++)
		if (slot_wrapper[s] != NULL && strcmp(name, slot_name[s]) == 0)
			return s;
	return -1;
}

EXPORT void *dlsym(void *handle, const char *name)
{
	dlsym_fn d = real_dlsym();
	if (__builtin_expect(d == NULL, 0))
		return NULL;
	/* RTLD_NEXT and RTLD_DEFAULT mean "after the caller" and "in the
	 * caller's namespace", and glibc takes the caller from dlsym's return
	 * address. A tail call leaves the program's return address in place,
	 * so glibc sees the real caller, not the shim: a library chaining
	 * dlsym(RTLD_NEXT, "getpid") gets the next getpid, not its own. These
	 * lookups are never wrapped either: global-scope lookups already find
	 * the shim's wrappers first. TestDlsymNextChains fails if the compiler
	 * ever stops emitting a jump here. */
	if (handle == RTLD_NEXT || handle == RTLD_DEFAULT) {
		/* "Is the driver loaded?" asked as dlsym(RTLD_DEFAULT, "cuMem...")
		 * (or RTLD_NEXT from the program, which the preloaded shim follows)
		 * would find the shim's own export in every process: for the names
		 * it wraps, answer NULL while no real driver entry point exists. */
		int s = slot_by_name(name);
		if (__builtin_expect(s >= 0, 0) && shim_real((enum slot_id)s) == NULL)
			return NULL;
		return d(handle, name);
	}
	void *r = d(handle, name);
	if (r == NULL)
		return r;
	int s = slot_by_name(name);
	if (s < 0)
		return r;
	/* A handle whose scope holds the shim (the program's own, from
	 * dlopen(NULL)) finds the shim's export: that is no driver either. */
	if (r == slot_wrapper[s] && shim_real((enum slot_id)s) == NULL)
		return NULL;
	return adopt((enum slot_id)s, r);
}

#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2ull

/* wrap_proc maps a cuGetProcAddress base name, at the requested CUDA version
 * and stream flavour, to a slot. */
static void *wrap_proc(const char *sym, void *real, int ver, cuuint64_t flags)
{
	static const struct {
		const char *base;
		enum slot_id slot, ptsz;
		int min_ver; /* the versioned _v2 entry points start at 3.2 */
	} map[] = {
		{"cuMemAlloc", S_ALLOC, S_ALLOC, 3020},
		{"cuMemAllocPitch", S_PITCH, S_PITCH, 3020},
		{"cuMemFree", S_FREE, S_FREE, 3020},
		{"cuMemGetInfo", S_INFO, S_INFO, 3020},
		{"cuMemAllocManaged", S_MANAGED, S_MANAGED, 0},
		{"cuMemAllocAsync", S_ASYNC, S_ASYNC_PTSZ, 0},
		{"cuMemAllocFromPoolAsync", S_POOL, S_POOL_PTSZ, 0},
		{"cuMemFreeAsync", S_FREE_ASYNC, S_FREE_ASYNC_PTSZ, 0},
		{"cuMemCreate", S_CREATE, S_CREATE, 0},
		{"cuMemRelease", S_RELEASE, S_RELEASE, 0},
		{"cuGetProcAddress", S_GPA2, S_GPA2, 12000},
	};
	if (sym == NULL || sym[0] != 'c' || sym[1] != 'u')
		return real;
	if (ver < 12000 && strcmp(sym, "cuGetProcAddress") == 0)
		return adopt(S_GPA, real); /* before 12.0 the name means the 4-argument form */
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		if (strcmp(sym, map[i].base) != 0)
			continue;
		if (ver < map[i].min_ver)
			return real; /* a legacy signature the wrappers do not share */
		return adopt(flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM ? map[i].ptsz : map[i].slot, real);
	}
	return real;
}

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t, void *);

CUresult shim_cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
	gpa_fn f = (gpa_fn)shim_real(S_GPA);
	if (f == NULL)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = f(sym, pfn, ver, flags);
	if (r == CUDA_SUCCESS && pfn != NULL && *pfn != NULL)
		*pfn = wrap_proc(sym, *pfn, ver, flags);
	return r;
}

CUresult shim_cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags, void *status)
{
	gpa2_fn f = (gpa2_fn)shim_real(S_GPA2);
	if (f == NULL)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = f(sym, pfn, ver, flags, status);
	if (r == CUDA_SUCCESS && pfn != NULL && *pfn != NULL)
		*pfn = wrap_proc(sym, *pfn, ver, flags);
	return r;
}
