/*
 * The driver's names the shim exports, and why a program that never loaded
 * the driver cannot see them.
 *
 * A program linked against libcuda calls cuMemAlloc_v2 through a symbol the
 * loader binds in the global scope, where the preloaded shim comes before
 * libcuda: exporting the name is how the shim counts those calls. But every
 * process loads the shim, and a program NOT linked against libcuda that asks
 * "is the driver there?" with a weak reference
 *
 *     extern CUresult cuMemAlloc_v2(CUdeviceptr *, size_t) __attribute__((weak));
 *     if (cuMemAlloc_v2 != NULL) ...
 *
 * would have it bound to the shim's export: a false "yes".
 *
 * So each name is a GNU indirect function (STT_GNU_IFUNC): when the loader
 * binds a reference to it (at start-up, on the first call of a lazy PLT
 * entry, in dlsym), it calls the name's resolver here and binds what that
 * returns. The resolver returns the wrapper while a libcuda is mapped in the
 * process, and NULL otherwise, so the weak reference reads NULL. A program
 * linked against libcuda always has it mapped before any of its references
 * is bound (the loader maps every dependency before it relocates any), and
 * so does a library that needs libcuda and is dlopen()ed later.
 *
 * What a resolver may do: it can run before the loader has relocated the
 * shim itself (a library that needs libcuda is relocated before the shim,
 * and with LD_BIND_NOW, or for a function pointer, its references are bound
 * then). So a resolver calls nothing through the PLT (no libc), reads no
 * pointer the loader fills in, and takes no lock: it reads
 * /proc/self/maps with raw system calls, and touches only its stack, the
 * read-only strings and the flag below, all reached PC-relative. When the
 * file cannot be read (no /proc in a chroot, a seccomp filter), it returns
 * the wrapper, as the shim did before: counting must not break a program
 * linked against the driver.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>

#include "shim.h"

/* 1 once a libcuda was seen mapped: later resolvers need not read again. A
 * "no" is never cached, since a later dlopen may map the driver. */
static int cuda_seen;

static long sys3(long nr, long a, long b, long c)
{
#if defined(__x86_64__)
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0;
#else
#error "add the system call instruction of this architecture"
#endif
}

#define EINTR_RAW 4

/* shim_cuda_mapped answers 1 when a file whose name starts with "libcuda.so"
 * (libcuda.so, libcuda.so.1, libcuda.so.<version>) is mapped, 0 when none
 * is, -1 when /proc/self/maps cannot be read. It matches the base name of
 * each line's path as the bytes stream past, so it needs no line buffer. */
int shim_cuda_mapped(void)
{
	static const char want[] = "libcuda.so";
	if (__atomic_load_n(&cuda_seen, __ATOMIC_RELAXED))
		return 1;
	long fd = sys3(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[512];
	int found = 0;
	/* match: how many bytes of want the current base name matched so far,
	 * or -1 when it cannot match (no '/' yet on this line, or a mismatch). */
	int match = -1;
	for (;;) {
		long n = sys3(SYS_read, fd, (long)buf, sizeof buf);
		if (n == -EINTR_RAW)
			continue;
		if (n < 0) {
			found = -1;
			break;
		}
		if (n == 0)
			break;
		for (long i = 0; i < n && !found; i++) {
			char c = buf[i];
			if (c == '\n') {
				found = match == (int)sizeof want - 1;
				match = -1;
			} else if (c == '/') {
				match = 0;
			} else if (match >= 0 && match < (int)sizeof want - 1) {
				match = c == want[match] ? match + 1 : -1;
			}
		}
		if (found)
			break;
	}
	sys3(SYS_close, fd, 0, 0);
	if (found == 1)
		__atomic_store_n(&cuda_seen, 1, __ATOMIC_RELAXED);
	return found;
}

/* EXPORT_IFUNC exports name as an indirect function resolving to
 * shim_<name> while a libcuda is mapped (or the maps cannot be read). */
#define EXPORT_IFUNC(name)                                                  \
	static __typeof__(shim_##name) *pick_##name(void)                   \
	{                                                                   \
		return shim_cuda_mapped() != 0 ? shim_##name : NULL;          \
	}                                                                   \
	EXPORT __typeof__(shim_##name) name __attribute__((ifunc("pick_" #name)));

EXPORT_IFUNC(cuMemAlloc_v2)
EXPORT_IFUNC(cuMemAllocPitch_v2)
EXPORT_IFUNC(cuMemAllocManaged)
EXPORT_IFUNC(cuMemAllocAsync)
EXPORT_IFUNC(cuMemAllocAsync_ptsz)
EXPORT_IFUNC(cuMemAllocFromPoolAsync)
EXPORT_IFUNC(cuMemAllocFromPoolAsync_ptsz)
EXPORT_IFUNC(cuMemFree_v2)
EXPORT_IFUNC(cuMemFreeAsync)
EXPORT_IFUNC(cuMemFreeAsync_ptsz)
EXPORT_IFUNC(cuMemCreate)
EXPORT_IFUNC(cuMemRelease)
EXPORT_IFUNC(cuMemGetInfo_v2)
EXPORT_IFUNC(cuGetProcAddress)
EXPORT_IFUNC(cuGetProcAddress_v2)
