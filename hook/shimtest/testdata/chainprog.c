/*
 * Runs the chaining library (chain.c) and checks RTLD_NEXT and RTLD_DEFAULT
 * keep their meaning: getpid through the chain is the kernel's pid,
 * dlsym(RTLD_DEFAULT, "getpid") is the chain's own (first in the global
 * scope), and the program's own dlsym(RTLD_NEXT, "getpid") skips the
 * program and finds the chain's. Prints "ok PID" or what went wrong.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	pid_t want = (pid_t)syscall(SYS_getpid);
	pid_t got = getpid();
	void *def = dlsym(RTLD_DEFAULT, "getpid");
	void *next = dlsym(RTLD_NEXT, "getpid");
	if (got != want) {
		printf("getpid through the chain = %d, want %d\n", (int)got, (int)want);
		return 1;
	}
	if (def != (void *)getpid) {
		printf("dlsym(RTLD_DEFAULT) = %p, the program's getpid is %p\n", def, (void *)getpid);
		return 1;
	}
	if (next != (void *)getpid) {
		printf("dlsym(RTLD_NEXT) from the program = %p, want the chain's %p\n", next, (void *)getpid);
		return 1;
	}
	printf("ok %d\n", (int)got);
	return 0;
}
