/* slowsock: socket(2) that takes 300 ms, to hold the shim's set-up open. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

int socket(int domain, int type, int protocol)
{
	usleep(300000);
	int (*real)(int, int, int) = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	return real(domain, type, protocol);
}
