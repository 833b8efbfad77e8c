/* See simstate.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "simstate.h"

const char *sim_state_dir(void)
{
	const char *d = getenv("MIGPRO_SIMGPU_STATE");
	return (d != NULL && *d != '\0') ? d : SIM_DEFAULT_STATE;
}

static void copy_field(char *dst, size_t n, const char *v)
{
	snprintf(dst, n, "%s", v);
}

static int read_instance(const char *uuid, struct sim_instance *inst)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/instances/%s", sim_state_dir(), uuid);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return -1;
	memset(inst, 0, sizeof *inst);
	char line[512];
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		char *eq = strchr(line, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		const char *k = line, *v = eq + 1;
		if (strcmp(k, "uuid") == 0)
			copy_field(inst->uuid, sizeof inst->uuid, v);
		else if (strcmp(k, "gpu_uuid") == 0)
			copy_field(inst->gpu_uuid, sizeof inst->gpu_uuid, v);
		else if (strcmp(k, "gpu_name") == 0)
			copy_field(inst->gpu_name, sizeof inst->gpu_name, v);
		else if (strcmp(k, "profile") == 0)
			copy_field(inst->profile, sizeof inst->profile, v);
		else if (strcmp(k, "driver_version") == 0)
			copy_field(inst->driver_version, sizeof inst->driver_version, v);
		else if (strcmp(k, "gpu_index") == 0)
			inst->gpu_index = atoi(v);
		else if (strcmp(k, "gi") == 0)
			inst->gi = atoi(v);
		else if (strcmp(k, "ci") == 0)
			inst->ci = atoi(v);
		else if (strcmp(k, "sm_count") == 0)
			inst->sm_count = atoi(v);
		else if (strcmp(k, "cc_major") == 0)
			inst->cc_major = atoi(v);
		else if (strcmp(k, "cc_minor") == 0)
			inst->cc_minor = atoi(v);
		else if (strcmp(k, "memory_total") == 0)
			inst->memory_total = strtoull(v, NULL, 10);
	}
	fclose(f);
	return (strcmp(inst->uuid, uuid) == 0 && inst->memory_total > 0) ? 0 : -1;
}

/* first_mig picks the first MIG UUID of a comma-separated device list. */
static int first_mig(const char *list, char *out, size_t n)
{
	if (list == NULL)
		return -1;
	while (*list != '\0') {
		size_t len = strcspn(list, ",");
		if (len > 4 && strncmp(list, "MIG-", 4) == 0 && len < n) {
			memcpy(out, list, len);
			out[len] = '\0';
			return 0;
		}
		list += len;
		if (*list == ',')
			list++;
	}
	return -1;
}

int sim_find_instance(struct sim_instance *inst)
{
	static const char *const vars[] = {"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"};
	char uuid[96];
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (first_mig(getenv(vars[i]), uuid, sizeof uuid) == 0)
			return read_instance(uuid, inst);
	return -1;
}

static void usage_dir(const char *uuid, char *out, size_t n)
{
	snprintf(out, n, "%s/usage/%s", sim_state_dir(), uuid);
}

/* A usage file's owner holds a shared flock on it for life; a reader that
 * gets an exclusive one knows the owner is gone. Values are read and written
 * under an OFD record lock on the 8 bytes, so no reader sees half a write. */
static int rw_value(int fd, unsigned long long *v, int write)
{
	struct flock lk = {.l_type = write ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 8};
	if (fcntl(fd, F_OFD_SETLKW, &lk) < 0)
		return -1;
	unsigned char b[8] = {0};
	int rc = 0;
	if (write) {
		for (int i = 0; i < 8; i++)
			b[i] = (unsigned char)(*v >> (8 * i));
		rc = pwrite(fd, b, 8, 0) == 8 ? 0 : -1;
	} else {
		ssize_t r = pread(fd, b, 8, 0);
		*v = 0;
		for (int i = 0; i < 8 && r == 8; i++)
			*v |= (unsigned long long)b[i] << (8 * i);
	}
	lk.l_type = F_UNLCK;
	fcntl(fd, F_OFD_SETLK, &lk);
	return rc;
}

unsigned long long sim_used_bytes(const char *uuid)
{
	char dir[PATH_MAX];
	usage_dir(uuid, dir, sizeof dir);
	DIR *d = opendir(dir);
	if (d == NULL)
		return 0;
	unsigned long long sum = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "p-", 2) != 0)
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			close(fd); /* its process is gone: the driver freed its memory */
			continue;
		}
		unsigned long long v = 0;
		if (rw_value(fd, &v, 0) == 0)
			sum += v;
		close(fd);
	}
	closedir(d);
	return sum;
}

static int usage_fd = -1;
static pid_t usage_pid;

int sim_usage_set(const char *uuid, unsigned long long bytes)
{
	pid_t pid = getpid();
	if (usage_fd >= 0 && usage_pid != pid) {
		/* A fork child: the parent's file and lock stay the parent's. */
		close(usage_fd);
		usage_fd = -1;
	}
	if (usage_fd < 0) {
		char dir[PATH_MAX - 128], tmp[PATH_MAX], final[PATH_MAX];
		usage_dir(uuid, dir, sizeof dir);
		if (mkdir(dir, 0777) < 0 && errno != EEXIST)
			return -1;
		/* Made under a name readers skip, locked, then renamed in: a
		 * reader never sees an unlocked file of a live process. */
		snprintf(tmp, sizeof tmp, "%s/.new-XXXXXX", dir);
		int fd = mkostemp(tmp, O_CLOEXEC);
		if (fd < 0)
			return -1;
		fchmod(fd, 0666);
		if (flock(fd, LOCK_SH) < 0) {
			unlink(tmp);
			close(fd);
			return -1;
		}
		snprintf(final, sizeof final, "%s/p-%d-%s", dir, (int)pid, tmp + strlen(dir) + 6);
		if (rename(tmp, final) < 0) {
			unlink(tmp);
			close(fd);
			return -1;
		}
		usage_fd = fd;
		usage_pid = pid;
	}
	return rw_value(usage_fd, &bytes, 1);
}

int sim_usage_lock(const char *uuid)
{
	char dir[PATH_MAX - 128], path[PATH_MAX];
	usage_dir(uuid, dir, sizeof dir);
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return -1;
	snprintf(path, sizeof path, "%s/.lock", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

void sim_usage_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}
