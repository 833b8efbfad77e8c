/*
 * The shim's lazy set-up and its socket: configuration from the
 * environment, the state a fork child resets, and a datagram socket kept on a high,
 * close-on-exec fd that is checked to still be the shim's own before each
 * send (see the rules in migpro_shim.c).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/auxv.h>
#include <sys/un.h>
#include <unistd.h>

#include "shim.h"

#define DEFAULT_SOCKET "/run/migpro/telemetry.sock"
#define DEFAULT_INTERVAL_MS 100
#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define CAS(p, expp, v) \
	__atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)

static int sock_fd = -1;
static dev_t sock_dev;
static ino_t sock_ino;
static struct sockaddr_un sock_addr;
static socklen_t sock_len;
unsigned long long shim_interval_ns = DEFAULT_INTERVAL_MS * 1000000ull;
pid_t shim_owner_pid;
int shim_init_state; /* 0 not yet, 1 in progress, 2 done */
static int sock_lock;    /* serialises reopening the socket */

/* The socket's fd is moved up to here (or the highest the fd limit allows):
 * programs hand out low numbers, and the ones that close or dup2 "all" fds
 * mostly stop well below. */
#define HIGH_FD 1000

/* fstat by system call: glibc 2.33 turned fstat from an inline wrapper into
 * a symbol of version GLIBC_2.33, above the shim's floor. */
static int fstat_fd(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

/* open_socket makes the shim's socket and moves it to a high fd. Returns
 * the fd, or -1. */
static int open_socket(void)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	struct rlimit rl;
	long floor = HIGH_FD;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur / 2 < floor)
		floor = (long)rl.rlim_cur / 2; /* keep the top half for the program */
	if (fd < floor) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)floor);
		if (high >= 0) {
			close(fd);
			fd = high;
		}
	}
	struct stat st;
	if (fstat_fd(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	sock_dev = st.st_dev;
	sock_ino = st.st_ino;
	return fd;
}

/* own_socket says whether sock_fd still is the socket the shim opened. */
static int own_socket(void)
{
	struct stat st;
	return fstat_fd(sock_fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == sock_dev && st.st_ino == sock_ino;
}

/* shim_sock_after_fork runs in a fork child, alone (migpro_shim.c's fork
 * handler): the socket keeps its fd, the child reports under its own pid,
 * and a set-up the parent had in progress on another thread is redone. */
void shim_sock_after_fork(void)
{
	shim_owner_pid = getpid();
	if (__atomic_load_n(&shim_init_state, __ATOMIC_RELAXED) == 1)
		shim_init_state = 0;
	sock_lock = 0;
}

/* A setuid or otherwise secure program (AT_SECURE): the loader honours
 * /etc/ld.so.preload even there, so the shim is loaded, but it stays
 * inert: it reads no environment and sends nothing. */
static int secure_program(void)
{
	return getauxval(AT_SECURE) != 0;
}

void shim_init(void)
{
	int st = __atomic_load_n(&shim_init_state, __ATOMIC_ACQUIRE);
	if (st == 2)
		return;
	st = 0;
	if (!__atomic_compare_exchange_n(&shim_init_state, &st, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&shim_init_state, __ATOMIC_ACQUIRE) != 2)
			; /* another thread is a few syscalls from done */
		return;
	}
	if (secure_program()) {
		__atomic_store_n(&shim_init_state, 2, __ATOMIC_RELEASE); /* no socket: nothing is sent */
		return;
	}
	const char *path = secure_getenv("MIGPRO_TELEMETRY_SOCKET");
	if (path == NULL || *path == '\0')
		path = DEFAULT_SOCKET;
	const char *iv = secure_getenv("MIGPRO_TELEMETRY_INTERVAL_MS");
	if (iv != NULL && *iv != '\0') {
		char *end;
		unsigned long ms = strtoul(iv, &end, 10);
		if (*end == '\0' && ms <= 3600000ul)
			shim_interval_ns = (unsigned long long)ms * 1000000ull;
	}
	size_t n = strlen(path);
	if (n < sizeof(sock_addr.sun_path)) {
		sock_addr.sun_family = AF_UNIX;
		memcpy(sock_addr.sun_path, path, n + 1);
		sock_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
		sock_fd = open_socket();
	}
	shim_owner_pid = getpid();
	__atomic_store_n(&shim_init_state, 2, __ATOMIC_RELEASE);
}

int shim_socket(void)
{
	if (sock_addr.sun_family != AF_UNIX)
		return -2;
	int fd = LOAD(&sock_fd);
	if (fd >= 0 && own_socket())
		return fd;
	int unlocked = 0;
	if (!CAS(&sock_lock, &unlocked, 1))
		return -1; /* another thread is reopening: this sample is dropped */
	if (LOAD(&sock_fd) == fd) {
		/* Never close the old number: it is the program's now. */
		STORE(&sock_fd, open_socket());
	}
	fd = LOAD(&sock_fd);
	__atomic_store_n(&sock_lock, 0, __ATOMIC_RELEASE);
	return fd;
}

int shim_sendto(int fd, const void *m, size_t n)
{
	return (int)sendto(fd, m, n, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&sock_addr, sock_len);
}
