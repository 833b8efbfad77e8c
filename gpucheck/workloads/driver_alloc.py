"""Allocate device memory through the CUDA driver API with ctypes alone.

Runs wherever libcuda.so.1 loads: a real driver, or the simulated driver's
stub (migctl record --simulate). It needs no torch, so the check can record
a real driver-level series even where torch is missing.

Modes:
  grow    allocate STEP MiB every PAUSE seconds until the driver refuses
          (CUDA_ERROR_OUT_OF_MEMORY) or BUDGET MiB are held; exit 0 either way
          and print how far it got
  loop    N alloc/free pairs of SIZE bytes; print the time per pair, for the
          shim's cost (step e)
  pattern a fixed series of allocations and frees; prints each result, for
          the proof that the shim changes nothing (step f)
"""
import argparse
import ctypes
import sys
import time

CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2


def load():
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        print("libcuda.so.1 not loadable: %s" % e)
        sys.exit(3)
    lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    lib.cuMemGetInfo_v2.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
    return lib


def check(what, r):
    if r != CUDA_SUCCESS:
        print("%s failed: CUresult %d" % (what, r))
        sys.exit(4)


def context(lib):
    check("cuInit", lib.cuInit(0))
    dev = ctypes.c_int()
    check("cuDeviceGet", lib.cuDeviceGet(ctypes.byref(dev), 0))
    ctx = ctypes.c_void_p()
    check("cuCtxCreate", lib.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev))
    return ctx


def alloc(lib, size):
    p = ctypes.c_uint64()
    r = lib.cuMemAlloc_v2(ctypes.byref(p), size)
    return r, p.value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["grow", "loop", "pattern"])
    ap.add_argument("--step-mib", type=int, default=64)
    ap.add_argument("--budget-mib", type=int, default=1 << 20)
    ap.add_argument("--pause", type=float, default=0.02)
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--size", type=int, default=1 << 20)
    a = ap.parse_args()
    lib = load()
    context(lib)
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    check("cuMemGetInfo", lib.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)))
    if a.mode == "grow":
        held, n = [], 0
        while (n + 1) * a.step_mib <= a.budget_mib:
            r, p = alloc(lib, a.step_mib << 20)
            if r == CUDA_ERROR_OUT_OF_MEMORY:
                print("grow: out of memory after %d MiB (device total %d MiB)" % (n * a.step_mib, total.value >> 20))
                break
            check("cuMemAlloc", r)
            held.append(p)
            n += 1
            time.sleep(a.pause)
        else:
            print("grow: held %d MiB, budget reached" % (n * a.step_mib))
        for p in held:
            check("cuMemFree", lib.cuMemFree_v2(p))
    elif a.mode == "loop":
        t0 = time.perf_counter()
        for _ in range(a.pairs):
            r, p = alloc(lib, a.size)
            check("cuMemAlloc", r)
            check("cuMemFree", lib.cuMemFree_v2(p))
        dt = time.perf_counter() - t0
        print("loop: %d pairs of %d bytes, %.3f us per pair" % (a.pairs, a.size, dt / a.pairs * 1e6))
    else:
        ptrs = []
        for size in [1 << 20, 3 << 20, 1, 64 << 20, 0]:
            r, p = alloc(lib, size)
            print("alloc %d -> %d" % (size, r))
            if r == CUDA_SUCCESS:
                ptrs.append(p)
        print("free bogus -> %d" % lib.cuMemFree_v2(ctypes.c_uint64(0xdead0000)))
        for p in ptrs:
            print("free -> %d" % lib.cuMemFree_v2(p))
        print("free again -> %d" % lib.cuMemFree_v2(ptrs[0]))
        print("oversized -> %d" % alloc(lib, total.value * 2)[0])
        sys.exit(5)


if __name__ == "__main__":
    main()
