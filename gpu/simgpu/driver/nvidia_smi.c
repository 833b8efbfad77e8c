/*
 * nvidia-smi of the simulated driver. It knows only the MIG instance the
 * environment makes visible (simstate.h), as the tool in a container with
 * one MIG device does:
 *   nvidia-smi -L            the GPU line and the MIG device line
 *   nvidia-smi --query-gpu=name,memory.total,memory.used,uuid,driver_version
 *              --format=csv[,noheader][,nounits]
 * Memory is the instance's: its size, and what live processes hold through
 * the stub libcuda.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simstate.h"

static int list(const struct sim_instance *in)
{
	printf("GPU %d: %s (UUID: %s)\n", in->gpu_index, in->gpu_name, in->gpu_uuid);
	printf("  MIG %-12sDevice %2d: (UUID: %s)\n", in->profile, 0, in->uuid);
	return 0;
}

static int query(const struct sim_instance *in, const char *fields, const char *format)
{
	int header = 1, units = 1;
	if (strncmp(format, "csv", 3) != 0 || (format[3] != '\0' && format[3] != ',')) {
		fprintf(stderr, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n");
		return 2;
	}
	if (strstr(format, "noheader") != NULL)
		header = 0;
	if (strstr(format, "nounits") != NULL)
		units = 0;
	unsigned long long mib = 1024ull * 1024ull;
	unsigned long long used = sim_used_bytes(in->uuid);
	char names[8][32];
	int n = 0;
	for (const char *p = fields; *p != '\0' && n < 8;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= sizeof names[0]) {
			fprintf(stderr, "Field \"%.*s\" is not a valid field to query.\n", (int)len, p);
			return 2;
		}
		memcpy(names[n], p, len);
		names[n++][len] = '\0';
		p += len;
		if (*p == ',')
			p++;
	}
	for (int i = 0; i < n; i++) {
		const char *f = names[i];
		if (strcmp(f, "name") && strcmp(f, "memory.total") && strcmp(f, "memory.used") && strcmp(f, "uuid") &&
		    strcmp(f, "driver_version")) {
			fprintf(stderr, "Field \"%s\" is not a valid field to query.\n", f);
			return 2;
		}
	}
	if (header) {
		for (int i = 0; i < n; i++) {
			int mem = strncmp(names[i], "memory.", 7) == 0;
			printf("%s%s%s", i ? ", " : "", names[i], mem && units ? " [MiB]" : "");
		}
		printf("\n");
	}
	for (int i = 0; i < n; i++) {
		const char *f = names[i], *sep = i ? ", " : "";
		if (strcmp(f, "name") == 0)
			printf("%s%s", sep, in->gpu_name);
		else if (strcmp(f, "uuid") == 0)
			printf("%s%s", sep, in->gpu_uuid);
		else if (strcmp(f, "driver_version") == 0)
			printf("%s%s", sep, in->driver_version[0] != '\0' ? in->driver_version : SIM_DRIVER_VERSION);
		else
			printf("%s%llu%s", sep, (strcmp(f, "memory.total") == 0 ? in->memory_total : used) / mib, units ? " MiB" : "");
	}
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct sim_instance in;
	if (sim_find_instance(&in) != 0) {
		fprintf(stderr, "No devices were found\n");
		return 6;
	}
	const char *fields = NULL, *format = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-L") == 0 || strcmp(argv[i], "--list-gpus") == 0)
			return list(&in);
		if (strncmp(argv[i], "--query-gpu=", 12) == 0)
			fields = argv[i] + 12;
		else if (strncmp(argv[i], "--format=", 9) == 0)
			format = argv[i] + 9;
		else {
			fprintf(stderr, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n");
			return 2;
		}
	}
	if (fields != NULL && format != NULL)
		return query(&in, fields, format);
	fprintf(stderr, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n");
	return 2;
}
