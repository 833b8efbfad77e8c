"""Summarise a GPU check run (run.sh): summary.md and summary.json in OUTDIR.

Needs only the Python standard library. Exit 1 when a step failed.

What it works out:
  (d) for each workload: peaks of used_bytes, the shim, NVML per process and
      torch's reserved memory; at each of the workload's own samples, the
      shim's latest figure against torch.cuda.memory_reserved() and NVML's
      latest per-process figure (the difference is the CUDA context and
      whatever is allocated outside PyTorch's pool);
  (e) the shim's cost: time per alloc/free pair and per training step, with
      and without it;
  (f) the shim changes nothing: the workload's output and exit code with and
      without it.
"""
import bisect
import csv
import json
import os
import statistics
import sys

MiB = 1 << 20


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]


def ints(rows, key):
    return [int(r[key]) for r in rows if r.get(key) not in (None, "")]


def workload(out, name):
    samples = read_csv(os.path.join(out, "traces", name + ".samples.csv"))
    if not samples:
        return None
    w = {
        "samples": len(samples),
        "peak_shim_mib": max(ints(samples, "shim_peak_bytes") or [0]) / MiB,
        "peak_nvml_process_mib": max(ints(samples, "nvml_process_bytes") or [0]) / MiB,
        "driver_allocs": max(ints(samples, "driver_allocs") or [0]),
        "seconds": float(samples[-1]["t"]),
    }
    trace = read_csv(os.path.join(out, "traces", name + ".csv"))
    w["peak_used_mib"] = max(ints(trace, "used_bytes") or [0]) / MiB
    # NVML against the shim at each poll: in the simulation both are the
    # instance's bytes; on a real GPU NVML adds the CUDA context.
    # Only polls where NVML lists the process compare: before it is listed
    # and after it exits NVML has no figure for it, while the shim's last
    # report still stands.
    polls = [r for r in samples if r["source"] == "nvml" and int(r["shim_bytes"]) > 0 and int(r["nvml_process_bytes"]) > 0]
    if polls:
        d = [(int(r["nvml_process_bytes"]) - int(r["shim_bytes"])) / MiB for r in polls]
        w["nvml_minus_shim_mib"] = {"median": statistics.median(d), "min": min(d), "max": max(d), "n": len(d)}
    torch_rows = read_csv(os.path.join(out, "logs", name + ".torch.csv"))
    if torch_rows:
        w["peak_torch_reserved_mib"] = max(ints(torch_rows, "torch_reserved")) / MiB
        times = [float(r["unix"]) for r in samples]
        shim_vs, nvml_vs = [], []
        # Without per-process figures (NVML's pids are the host's), the
        # devices' used memory over its level before the workload stands in.
        per_proc = any(int(r["nvml_process_bytes"]) > 0 for r in samples)
        base = min(ints([r for r in samples if r["source"] == "nvml"], "nvml_device_bytes") or [0])
        w["nvml_view"] = "per-process" if per_proc else "device used minus its idle level"
        for tr in torch_rows:
            i = bisect.bisect_right(times, float(tr["unix"]) + 0.05) - 1
            if i < 0:
                continue
            s = samples[i]
            res = int(tr["torch_reserved"])
            shim_vs.append((int(s["shim_bytes"]) - res) / MiB)
            nv = int(s["nvml_process_bytes"]) if per_proc else int(s["nvml_device_bytes"]) - base
            if nv > 0:
                nvml_vs.append((nv - res) / MiB)
        for key, vals in (("shim_minus_reserved_mib", shim_vs), ("nvml_minus_reserved_mib", nvml_vs)):
            if vals:
                w[key] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}
        # The shim matches torch when it is within 2% or 64 MiB of reserved at the median.
        if shim_vs:
            tol = max(64.0, 0.02 * w["peak_torch_reserved_mib"])
            w["shim_matches_reserved"] = abs(statistics.median(shim_vs)) <= tol
    return w


def last_number(path, after):
    """The number following `after` in the file's lines, or None."""
    if not os.path.exists(path):
        return None
    for line in open(path):
        if after in line:
            try:
                return float(line.split(after)[0].split()[-1])
            except (ValueError, IndexError):
                return None
    return None


def own_output(path):
    """The workload's own output: migctl record's summary lines dropped."""
    if not os.path.exists(path):
        return None
    return [line for line in open(path) if not line.startswith("migctl record:")]


def main(out):
    with open(os.path.join(out, "steps.tsv")) as f:
        steps = list(csv.DictReader(f, delimiter="\t"))
    s = {"steps": steps, "workloads": {}, "cost": {}, "same": {}}
    try:
        doc = json.load(open(os.path.join(out, "doctor.json")))
        s["doctor"] = {c["name"]: c["status"] for c in doc["checks"]}
        s["doctor_failing"] = ["%s: %s" % (c["name"], c["detail"]) for c in doc["checks"] if c["status"] == "fail"]
    except (OSError, ValueError, KeyError):
        s["doctor"] = None
    try:
        spec = json.load(open(os.path.join(out, "cdi-spec.json")))
        s["cdi_spec"] = {k: len(spec.get(k) or []) for k in ("libraries", "binaries", "firmware", "deviceNodes", "hooks", "instances")}
        s["cdi_spec"]["driverVersion"] = spec.get("driverVersion")
        s["cdi_spec"]["notes"] = spec.get("notes") or []
    except (OSError, ValueError):
        s["cdi_spec"] = None
    for st in steps:
        w = workload(out, st["step"])
        if w:
            w["exit"] = st["exit"]
            s["workloads"][st["step"]] = w
    logs = os.path.join(out, "logs")
    for kind, unit in (("alloc", "us per pair"), ("train", "ms per step")):
        runs = {}
        for side in ("shim", "noshim"):
            vals = [last_number(os.path.join(logs, "cost-%s-%s-%d.out" % (kind, side, r)), unit) for r in (1, 2)]
            runs[side] = [v for v in vals if v is not None]
        if runs["shim"] and runs["noshim"]:
            a, b = min(runs["shim"]), min(runs["noshim"])
            s["cost"][kind] = {"unit": unit, "shim": a, "noshim": b, "ratio": a / b if b else None, "added": a - b,
                               "runs": runs}
    for kind in ("driver", "torch"):
        a = own_output(os.path.join(logs, "same-%s-shim.out" % kind))
        b = own_output(os.path.join(logs, "same-%s-noshim.out" % kind))
        if a is not None and b is not None:
            ea = next((x["exit"] for x in steps if x["step"] == "same-%s-shim" % kind), None)
            eb = next((x["exit"] for x in steps if x["step"] == "same-%s-noshim" % kind), None)
            diff = [line.rstrip() for line in a if line not in b] + [line.rstrip() for line in b if line not in a]
            s["same"][kind] = {"identical": a == b and ea == eb, "exit_shim": ea, "exit_noshim": eb, "lines": len(a), "differing": diff[:10]}
    failed = [x["step"] for x in steps if x["status"] == "fail"]
    s["failed"] = failed
    for kind, v in s["same"].items():
        if not v["identical"]:
            failed.append("same-" + kind)
    json.dump(s, open(os.path.join(out, "summary.json"), "w"), indent=2)
    write_md(out, s)
    return 1 if failed else 0


def fmt(d):
    return "%.1f (%.1f … %.1f, n=%d)" % (d["median"], d["min"], d["max"], d["n"]) if d else "–"


def write_md(out, s):
    L = ["# GPU check summary", ""]
    L.append("| step | status | s | exit | note |")
    L.append("|---|---|---:|---:|---|")
    for x in s["steps"]:
        L.append("| %s | %s | %s | %s | %s |" % (x["step"], x["status"], x["seconds"], x["exit"], x["note"].replace("|", "/")))
    L += ["", "## (a) doctor", ""]
    if s.get("doctor") is None:
        L.append("no report")
    else:
        L.append(", ".join("%s %s" % kv for kv in s["doctor"].items()))
        for f in s.get("doctor_failing", []):
            L.append("- failing: " + f)
    L += ["", "## (b) CDI spec", ""]
    L.append(json.dumps(s["cdi_spec"]) if s["cdi_spec"] else "no spec")
    L += ["", "## (c, d) workloads (MiB)", "",
          "| workload | exit | s | samples | allocs | peak used | peak shim | peak NVML/proc | peak torch reserved | shim − reserved | NVML − reserved | NVML − shim | shim ≈ reserved |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|"]
    for n, w in s["workloads"].items():
        L.append("| %s | %s | %.1f | %d | %d | %.0f | %.0f | %.0f | %s | %s | %s | %s | %s |" % (
            n, w["exit"], w["seconds"], w["samples"], w["driver_allocs"], w["peak_used_mib"], w["peak_shim_mib"],
            w["peak_nvml_process_mib"], "%.0f" % w["peak_torch_reserved_mib"] if "peak_torch_reserved_mib" in w else "–",
            fmt(w.get("shim_minus_reserved_mib")), fmt(w.get("nvml_minus_reserved_mib")), fmt(w.get("nvml_minus_shim_mib")),
            {True: "yes", False: "**no**"}.get(w.get("shim_matches_reserved"), "–")))
    L += ["", "## (e) the shim's cost", ""]
    for k, c in s["cost"].items():
        L.append("- %s: best of %d runs each: %.3f %s with the shim, %.3f without (%.2f×, %+.3f); runs %s" % (
            k, len(c["runs"]["shim"]), c["shim"], c["unit"], c["noshim"], c["ratio"] or 0, c["added"], c["runs"]))
    if not s["cost"]:
        L.append("not measured")
    L += ["", "## (f) the shim changes nothing", ""]
    for k, v in s["same"].items():
        L.append("- %s: %s (exit %s / %s, %d lines)%s" % (k, "identical" if v["identical"] else "**differs**", v["exit_shim"],
                                                        v["exit_noshim"], v["lines"], "; " + " / ".join(v["differing"]) if v["differing"] else ""))
    if not s["same"]:
        L.append("not run")
    L += ["", "failed: " + (", ".join(s["failed"]) if s["failed"] else "nothing"), ""]
    open(os.path.join(out, "summary.md"), "w").write("\n".join(L))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
