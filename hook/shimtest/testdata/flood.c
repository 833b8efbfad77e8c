/*
 * A hostile container process: floods the telemetry socket named by
 * MIGPRO_TELEMETRY_SOCKET with garbage datagrams of random sizes (some
 * oversized, some the right size with a bad magic) for the given number of
 * milliseconds, as fast as it can, ignoring every error. Prints the count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 1000;
	const char *path = getenv("MIGPRO_TELEMETRY_SOCKET");
	if (path == NULL || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return 2;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	static unsigned char buf[65536];
	unsigned seed = 12345;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long sent = 0;
	for (;;) {
		for (int i = 0; i < 256; i++) {
			seed = seed * 1103515245u + 12345u;
			size_t n = (seed >> 8) % 3 == 0 ? 80 : (seed >> 12) % 4096;
			for (size_t j = 0; j < n && j < 16; j++)
				buf[j] = (unsigned char)(seed >> j);
			if (sendto(fd, buf, n, MSG_DONTWAIT, (struct sockaddr *)&a, sizeof a) >= 0)
				sent++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
			break;
	}
	printf("%ld\n", sent);
	return 0;
}
