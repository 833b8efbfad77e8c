# The GPU check (docs/gpu-check.md): a kit to run on the first real GPU at
# hand, and the same script on the simulated driver here.
#
#   make gpu-kit     $(GPU_KIT): stripped migctl and migpro-lab (its cdi-spec),
#                    the shim, the simulated
#                    driver's stubs, the workload scripts and run.sh; at most
#                    64 MiB, ready to copy to a GPU machine
#   make gpu-check   run the kit: GPU_CHECK_OUT=DIR (default $(BIN)/gpu-check),
#                    SIMULATE=MODEL for the simulated driver (empty: the real one)
#   make gpu-check-test   gpu-check on a simulated a100-40gb, then check its
#                    summary (part of make test)

GPU_KIT         ?= $(BIN)/gpu-kit
GPU_KIT_MAX_MIB  = 64
GPU_CHECK_OUT   ?= $(BIN)/gpu-check
SIMULATE        ?=


.PHONY: gpu-kit gpu-check gpu-check-test
gpu-kit: $(BIN)/libmigpro-shim.so simdriver
	rm -rf $(GPU_KIT)
	mkdir -p $(GPU_KIT)/bin $(GPU_KIT)/lib/migpro/simdriver $(GPU_KIT)/workloads
	$(GO) build -ldflags '-s -w' -o $(GPU_KIT)/bin/migctl ./cmd/migctl
	$(GO) build -ldflags '-s -w' -o $(GPU_KIT)/bin/migpro-lab ./cmd/migpro-lab
	cp $(BIN)/libmigpro-shim.so $(GPU_KIT)/lib/migpro/
	strip --strip-unneeded $(GPU_KIT)/lib/migpro/libmigpro-shim.so
	cp $(SIMDRIVER_OUT)/libcuda.so $(SIMDRIVER_OUT)/libnvidia-ml.so $(SIMDRIVER_OUT)/nvidia-smi $(GPU_KIT)/lib/migpro/simdriver/
	cp gpucheck/run.sh gpucheck/analyze.py $(GPU_KIT)/
	cp docs/gpu-check.md $(GPU_KIT)/README.md
	cp gpucheck/workloads/*.py $(GPU_KIT)/workloads/
	@size=$$(du -sb $(GPU_KIT) | cut -f1); \
	if [ $$size -gt $$(( $(GPU_KIT_MAX_MIB) * 1024 * 1024 )) ]; then \
		echo "gpu-kit: $$size bytes, over $(GPU_KIT_MAX_MIB) MiB"; exit 1; fi; \
	echo "gpu-kit: $(GPU_KIT), $$size bytes (limit $(GPU_KIT_MAX_MIB) MiB)"

gpu-check: gpu-kit
	rm -rf $(GPU_CHECK_OUT)
	SIMULATE=$(SIMULATE) GPU_CHECK_OUT=$(GPU_CHECK_OUT) bash $(GPU_KIT)/run.sh

gpu-check-test:
	$(MAKE) --no-print-directory gpu-check SIMULATE=a100-40gb GPU_CHECK_OUT=$(BIN)/gpu-check-sim
	python3 gpucheck/verify_sim.py $(BIN)/gpu-check-sim

TEST_TARGETS += gpu-check-test
