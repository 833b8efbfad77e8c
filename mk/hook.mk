# The OCI hook, the telemetry shim and agent-side telemetry; see docs/hook.md.
#
#   make shim        build $(BIN)/libmigpro-shim.so with the system gcc
#   make hook        build $(BIN)/migpro-hook (static: no cgo in its imports)
#   (hook-fuzz is in mk/fuzz.mk)
#   make hook-bench  shim overhead, hook start time, agent ingest rate

SHIM_CFLAGS = -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden
# libc alone: an image without libdl.so.2 must still run its programs (the
# shim takes dlvsym as a weak reference, see hook/shim/resolve.c).
SHIM_LIBS =

.PHONY: shim hook hook-bench

build: $(BIN)/libmigpro-shim.so

shim: $(BIN)/libmigpro-shim.so

SHIM_SRC = $(wildcard hook/shim/*.c)

$(BIN)/libmigpro-shim.so: $(SHIM_SRC) $(wildcard hook/shim/*.h)
	@mkdir -p $(BIN)
	gcc $(SHIM_CFLAGS) -o $@ $(SHIM_SRC) $(SHIM_LIBS)

hook:
	$(GO) build -o $(BIN)/migpro-hook ./cmd/migpro-hook

hook-bench:
	$(GO) test -run '^$$' -bench ShimAllocFreePair -benchtime 1000000x ./hook/shimtest
	$(GO) test -run '^$$' -bench HookStart -benchtime 50x ./cmd/migpro-hook
	$(GO) test -run '^$$' -bench Ingest -benchmem -cpu 1 ./telemetry
