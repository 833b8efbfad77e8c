"""Checks a simulated GPU check run (make gpu-check-test): every step that
can run on the simulated driver passed and says what it should, and every
step that needs torch with CUDA says it was not run. Exit 1 with one line per
problem."""
import json
import os
import sys

out = sys.argv[1]
s = json.load(open(os.path.join(out, "summary.json")))
steps = {x["step"]: x for x in s["steps"]}
problems = []


def want(cond, msg):
    if not cond:
        problems.append(msg)


for name in ("doctor", "cdi-spec", "driver-grow", "driver-oom", "cost-alloc-shim-1", "cost-alloc-noshim-1", "cost-alloc-shim-2", "cost-alloc-noshim-2",
             "same-driver-shim", "same-driver-noshim"):
    want(steps.get(name, {}).get("status") == "pass", "step %s: %s" % (name, steps.get(name)))
for name in ("model-load", "generate-oom", "serve-warm-pool", "vllm-like", "train-settle", "train-leak",
             "cost-train-shim-1", "cost-train-noshim-1", "cost-train-shim-2", "cost-train-noshim-2", "same-torch-shim", "same-torch-noshim"):
    want(steps.get(name, {}).get("status") == "not run", "step %s should say not run: %s" % (name, steps.get(name)))
want(s.get("doctor") and all(v != "fail" for v in s["doctor"].values()), "doctor on the simulated driver: %s" % s.get("doctor"))
spec = s.get("cdi_spec") or {}
want(spec.get("libraries", 0) >= 2 and spec.get("binaries", 0) >= 1 and spec.get("instances") == 1,
     "cdi spec of the simulated driver: %s" % spec)
grow = s["workloads"].get("driver-grow", {})
want(grow.get("driver_allocs") == 16 and abs(grow.get("peak_shim_mib", 0) - 4096) < 1,
     "driver-grow: want 16 allocations and a 4096 MiB peak, got %s" % grow)
# NVML polls and shim samples are taken at different moments 100 ms apart at
# most. The driver has the memory before the shim reports it, so NVML is
# never below the shim while it lists the process, and never more than two
# 256 MiB steps above it.
nm = grow.get("nvml_minus_shim_mib")
want(nm is not None and 0 <= nm["min"] <= nm["max"] <= 512,
     "driver-grow: simulated NVML should track the shim: %s" % nm)
oom = s["workloads"].get("driver-oom", {})
want(4000 < oom.get("peak_shim_mib", 0) <= 5120, "driver-oom: peak should be the 1g.5gb's memory: %s" % oom)
want("driver" in s["same"] and s["same"]["driver"]["identical"] and s["same"]["driver"]["lines"] >= 8,
     "same-driver: %s" % s["same"].get("driver"))
want("alloc" in s["cost"], "cost of the shim on the alloc loop not measured")
want(not s["failed"], "failed: %s" % s["failed"])
for p in problems:
    print("gpu-check-test: " + p)
sys.exit(1 if problems else 0)
