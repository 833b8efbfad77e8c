# The simulated driver's user space (gpu/simgpu/driver): the stub libcuda,
# libnvidia-ml and nvidia-smi that gpu/simgpu installs into a driver root
# (simgpu.InstallDriverRoot). Built by `make build` into $(BIN)/simdriver.
#
#   make simdriver   build $(BIN)/simdriver/{libcuda.so,libnvidia-ml.so,nvidia-smi}

SIMDRIVER_DIR    = gpu/simgpu/driver
SIMDRIVER_OUT    = $(BIN)/simdriver
SIMDRIVER_CFLAGS = -O2 -Wall -Wextra -Werror -fvisibility=hidden
SIMDRIVER_COMMON = $(SIMDRIVER_DIR)/simstate.c $(SIMDRIVER_DIR)/simstate.h

.PHONY: simdriver
build: simdriver
simdriver: $(SIMDRIVER_OUT)/libcuda.so $(SIMDRIVER_OUT)/libnvidia-ml.so $(SIMDRIVER_OUT)/nvidia-smi

$(SIMDRIVER_OUT)/libcuda.so: $(SIMDRIVER_DIR)/cuda.c $(SIMDRIVER_DIR)/cuda_device.c $(SIMDRIVER_DIR)/cuda.h $(SIMDRIVER_COMMON)
	@mkdir -p $(@D)
	gcc $(SIMDRIVER_CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -o $@ $(SIMDRIVER_DIR)/cuda.c $(SIMDRIVER_DIR)/cuda_device.c $(SIMDRIVER_DIR)/simstate.c -lpthread

$(SIMDRIVER_OUT)/libnvidia-ml.so: $(SIMDRIVER_DIR)/nvml.c $(SIMDRIVER_COMMON)
	@mkdir -p $(@D)
	gcc $(SIMDRIVER_CFLAGS) -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $(SIMDRIVER_DIR)/nvml.c

$(SIMDRIVER_OUT)/nvidia-smi: $(SIMDRIVER_DIR)/nvidia_smi.c $(SIMDRIVER_COMMON)
	@mkdir -p $(@D)
	gcc $(SIMDRIVER_CFLAGS) -o $@ $(SIMDRIVER_DIR)/nvidia_smi.c $(SIMDRIVER_DIR)/simstate.c
