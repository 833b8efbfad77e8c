/*
 * libnvidia-ml.so.<version> of the simulated driver. The simulated NVML
 * proper lives in the agent's process (gpu/simgpu); this file exists so the
 * driver root holds what a real driver installs, for tools that find the
 * driver by its libraries. It answers the version calls and initialises;
 * device calls report no devices.
 */
#include <stdio.h>
#include <string.h>

#include "simstate.h"

#define EXPORT __attribute__((visibility("default")))

enum { NVML_SUCCESS = 0, NVML_ERROR_INVALID_ARGUMENT = 2, NVML_ERROR_INSUFFICIENT_SIZE = 7 };

EXPORT int nvmlInit_v2(void) { return NVML_SUCCESS; }
EXPORT int nvmlInit(void) { return NVML_SUCCESS; }
EXPORT int nvmlInitWithFlags(unsigned int flags) { (void)flags; return NVML_SUCCESS; }
EXPORT int nvmlShutdown(void) { return NVML_SUCCESS; }

EXPORT int nvmlSystemGetDriverVersion(char *v, unsigned int n)
{
	if (v == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (n < sizeof SIM_DRIVER_VERSION)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(v, SIM_DRIVER_VERSION, sizeof SIM_DRIVER_VERSION);
	return NVML_SUCCESS;
}

EXPORT int nvmlSystemGetCudaDriverVersion(int *v)
{
	if (v == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*v = SIM_CUDA_VERSION;
	return NVML_SUCCESS;
}

EXPORT int nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

EXPORT int nvmlDeviceGetCount_v2(unsigned int *n)
{
	if (n == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*n = 0;
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(int r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	default: return "Unknown Error";
	}
}
