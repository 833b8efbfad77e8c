/*
 * What the simulated driver's user-space stubs (libcuda, nvidia-smi,
 * libnvidia-ml) share: finding the instance a process may use, and the
 * per-process usage files through which the simulated NVML sees the bytes
 * the stub libcuda hands out. The layout is written by gpu/simgpu (see its
 * doc.go, "Driver root"):
 *
 *   <state>/instances/<MIG-UUID>        key=value lines describing the instance
 *   <state>/usage/<MIG-UUID>/p-<unique> one per live process: 8 bytes, the
 *                                       bytes it holds, little-endian
 *
 * <state> is $MIGPRO_SIMGPU_STATE, or /run/migpro-simgpu.
 */
#ifndef MIGPRO_SIMSTATE_H
#define MIGPRO_SIMSTATE_H

#include <stddef.h>

#define SIM_DEFAULT_STATE "/run/migpro-simgpu"
#define SIM_DRIVER_VERSION "550.127.05"
#define SIM_CUDA_VERSION 12040

struct sim_instance {
	char uuid[96];       /* MIG-... */
	char gpu_uuid[96];   /* GPU-... */
	char gpu_name[128];  /* NVIDIA A100-SXM4-40GB */
	char profile[32];    /* 1g.5gb */
	char driver_version[32]; /* what the simulated NVML reports */
	int gpu_index, gi, ci, sm_count, cc_major, cc_minor;
	unsigned long long memory_total;
};

/* sim_state_dir is the state directory in use. */
const char *sim_state_dir(void);

/* sim_find_instance fills inst with the instance the environment makes
 * visible (NVIDIA_VISIBLE_DEVICES, then CUDA_VISIBLE_DEVICES: the first
 * entry that is a MIG UUID). Returns 0, or -1 when there is none or its
 * description cannot be read. */
int sim_find_instance(struct sim_instance *inst);

/* sim_used_bytes sums the usage files of live processes on the instance. */
unsigned long long sim_used_bytes(const char *uuid);

/* sim_usage_set records that this process holds bytes on the instance:
 * it creates the process's usage file on first use (again after a fork).
 * Returns 0 or -1. */
int sim_usage_set(const char *uuid, unsigned long long bytes);

/* sim_usage_lock / unlock serialise admission checks on one instance
 * across processes (an exclusive flock on <usage>/<uuid>/.lock). */
int sim_usage_lock(const char *uuid);
void sim_usage_unlock(int fd);

#endif
