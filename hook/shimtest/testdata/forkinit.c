/*
 * forkinit: a thread makes the process's first allocation (the shim's
 * set-up, slowed by slowsock.c's socket) while the main thread forks; the
 * child then allocates. The child must finish: it once waited forever for
 * the set-up of a thread it does not have.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

typedef unsigned long long CUdeviceptr;
extern int cuMemAlloc_v2(CUdeviceptr *, size_t);

static void *first(void *arg)
{
	(void)arg;
	CUdeviceptr p;
	cuMemAlloc_v2(&p, 4096);
	return NULL;
}

int main(void)
{
	pthread_t th;
	pthread_create(&th, NULL, first, NULL);
	usleep(50000); /* the thread is inside the shim's set-up now */
	pid_t pid = fork();
	if (pid == 0) {
		alarm(5);
		CUdeviceptr p;
		cuMemAlloc_v2(&p, 4096);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	pthread_join(th, NULL);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		puts("ok");
		return 0;
	}
	printf("child did not finish: status %#x\n", st);
	return 1;
}
