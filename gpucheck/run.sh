#!/usr/bin/env bash
# migpro's GPU check: everything the first real GPU should show, in one run.
#
#   run.sh [OUTDIR]            OUTDIR, else $GPU_CHECK_OUT, else $OUT
#   SIMULATE=a100-40gb run.sh  the same on the simulated driver (steps that
#                              need torch with CUDA say "not run")
#
# Needs bash, python3 (torch and transformers for the PyTorch steps) and the
# NVIDIA driver; no Go, no network. It only reads the GPU's settings: MIG
# mode is left as it is and no instance is created or destroyed (on a real
# GPU nothing here calls a MIG-changing function; budgets are set with
# torch.cuda.set_per_process_memory_fraction). Every result goes under
# OUTDIR; summary.md and summary.json say what matched and by how much.
# Exit 0 when no step failed.
set -u
KIT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUTDIR=${1:-${GPU_CHECK_OUT:-${OUT:-}}}
if [ -z "$OUTDIR" ]; then
	echo "run.sh: give an output directory: run.sh DIR, or GPU_CHECK_OUT=DIR (or OUT=DIR)" >&2
	exit 2
fi
mkdir -p "$OUTDIR/traces" "$OUTDIR/logs" || exit 2
OUTDIR=$(cd "$OUTDIR" && pwd)
SIM=${SIMULATE:-}
MIGCTL="$KIT/bin/migctl"
LAB="$KIT/bin/migpro-lab"
W="$KIT/workloads"
STEP_LIMIT=${STEP_LIMIT:-75}     # seconds per step
TOTAL_LIMIT=${TOTAL_LIMIT:-450}  # seconds for the whole check (the GPU has 15 min in all)
export BUDGET_GIB=${BUDGET_GIB:-8}
T0=$(date +%s)
STEPS="$OUTDIR/steps.tsv"
printf 'step\tstatus\tseconds\texit\tnote\n' >"$STEPS"

simargs=()
[ -n "$SIM" ] && simargs=(--simulate "$SIM")

# step NAME STATUS SECONDS EXIT NOTE
step() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$STEPS"; echo "run.sh: $1: $2 ($3 s) $5"; }
elapsed() { echo $(($(date +%s) - T0)); }
limited() {
	if command -v timeout >/dev/null; then timeout -k 5 "$STEP_LIMIT" "$@"; else "$@"; fi
}

# run NAME EXPECTED_EXITS NOTE -- COMMAND...: one timed step whose exit must be one of
# EXPECTED_EXITS (comma-separated).
run() {
	local name=$1 want=$2 note=$3
	shift 4
	if [ "$(elapsed)" -ge "$TOTAL_LIMIT" ]; then
		step "$name" "not run" 0 - "the check's $TOTAL_LIMIT s were spent"
		return
	fi
	local s rc
	s=$(date +%s)
	limited "$@" >"$OUTDIR/logs/$name.out" 2>&1
	rc=$?
	local d=$(($(date +%s) - s))
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		step "$name" fail "$d" "$rc" "timed out after $STEP_LIMIT s"
	elif [[ ",$want," == *",$rc,"* ]]; then
		step "$name" pass "$d" "$rc" "$note"
	else
		step "$name" fail "$d" "$rc" "exit $rc, want $want: $(tail -n 1 "$OUTDIR/logs/$name.out" | tr '\t' ' ' | cut -c1-200)"
	fi
}

# record NAME EXPECTED_EXIT NOTE [RECORD FLAGS] -- COMMAND...: a workload under migctl record.
record() {
	local name=$1 want=$2 note=$3
	shift 3
	local flags=()
	while [ "$1" != "--" ]; do flags+=("$1"); shift; done
	shift
	WORKLOAD_LOG="$OUTDIR/logs/$name.torch.csv" run "$name" "$want" "$note" -- \
		"$MIGCTL" record "${simargs[@]}" "${flags[@]}" -o "$OUTDIR/traces/$name.csv" --samples "$OUTDIR/traces/$name.samples.csv" -- "$@"
}

notrun() { step "$1" "not run" 0 - "$2"; }

# The machine.
{
	echo "date: $(date -u +%FT%TZ)"
	echo "kernel: $(uname -r)"
	echo "glibc: $(ldd --version 2>/dev/null | head -n 1)"
	echo "python: $(python3 --version 2>&1)"
	echo "simulate: ${SIM:-no}"
	python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available()); print("transformers", transformers.__version__)' 2>&1 | tail -n 2
	[ -z "$SIM" ] && nvidia-smi -L 2>&1
	[ -z "$SIM" ] && nvidia-smi --query-gpu=name,driver_version,memory.total,mig.mode.current,mig.mode.pending --format=csv 2>&1
} >"$OUTDIR/machine.txt" 2>&1
if ! "$MIGCTL" version >"$OUTDIR/logs/migctl-version.out" 2>&1; then
	step migctl fail 0 - "migctl does not run here: $(head -n 1 "$OUTDIR/logs/migctl-version.out")"
	python3 "$KIT/analyze.py" "$OUTDIR" || true
	exit 1
fi

TORCH=no
if [ -z "$SIM" ] && python3 -c 'import sys, torch, transformers; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
	TORCH=yes
fi
why_not="needs torch with CUDA"
[ -n "$SIM" ] && why_not="needs torch with CUDA; the simulated driver has none"

# (a) doctor on the driver's NVML: exit 0 or 1 is a report (1: a node check failed, such as no
# container runtime on a bare GPU box; the summary lists them). Anything else is a failure.
run doctor 0,1 "report in doctor.txt" -- "$MIGCTL" doctor "${simargs[@]}"
cp "$OUTDIR/logs/doctor.out" "$OUTDIR/doctor.txt"
"$MIGCTL" doctor "${simargs[@]}" -o json >"$OUTDIR/doctor.json" 2>/dev/null

# (b) the CDI spec the agent's code would write, with the real driver root; nothing is written to /etc/cdi.
run cdi-spec 0 "cdi-spec.json" -- "$LAB" cdi-spec "${simargs[@]}" -o json
cp "$OUTDIR/logs/cdi-spec.out" "$OUTDIR/cdi-spec.json"
"$LAB" cdi-spec "${simargs[@]}" >"$OUTDIR/cdi-spec.txt" 2>&1

# (c) workloads under migctl record. The driver-level ones need only ctypes.
record driver-grow 0 "ctypes cuMemAlloc, 256 MiB steps to 4 GiB" -- python3 "$W/driver_alloc.py" grow --step-mib 256 --budget-mib 4096 --pause 0.05
if [ -n "$SIM" ]; then
	record driver-oom 0 "ctypes, until the 1g.5gb instance is full" --profile 1g.5gb -- python3 "$W/driver_alloc.py" grow --step-mib 256 --budget-mib 16384 --pause 0.02
else
	notrun driver-oom "simulated only: on a real GPU it would fill the whole device"
fi
workloads=(model-load generate-oom serve-warm-pool vllm-like train-settle train-leak)
if [ "$TORCH" = yes ]; then
	record model-load 0 "0.55B Llama from a config, moved tensor by tensor" -- python3 "$W/model_load.py"
	record generate-oom 3 "KV cache grows into the ${BUDGET_GIB} GiB budget: OOM, exit 3" -- python3 "$W/generate_oom.py"
	record serve-warm-pool 0 "requests served from a warm pool" -- python3 "$W/serve_warm_pool.py"
	record vllm-like 0 "load, profile, empty_cache, KV cache to 90% of the budget" -- python3 "$W/vllm_like.py"
	record train-settle 0 "AdamW training that settles" -- python3 "$W/train.py" settle --steps 60
	record train-leak 3 "training that keeps each loss's graph: OOM, exit 3" -- python3 "$W/train.py" leak
else
	for n in "${workloads[@]}"; do notrun "$n" "$why_not"; done
fi

# (d) shim against torch's reserved memory and NVML: worked out by analyze.py from the logs above.

# (e) the shim's cost, with and without it, in this run: two rounds, interleaved, so a
# neighbour's burst does not land on one side only (analyze.py takes each side's best).
for round in 1 2; do
	record cost-alloc-shim-$round 0 "20000 cuMemAlloc/cuMemFree pairs, shim" -- python3 "$W/driver_alloc.py" loop --pairs 20000
	record cost-alloc-noshim-$round 0 "the same, no shim" --no-shim -- python3 "$W/driver_alloc.py" loop --pairs 20000
done
for round in 1 2; do
	if [ "$TORCH" = yes ]; then
		record cost-train-shim-$round 0 "training steps, shim" -- python3 "$W/train.py" bench --steps 40
		record cost-train-noshim-$round 0 "the same, no shim" --no-shim -- python3 "$W/train.py" bench --steps 40
	else
		notrun cost-train-shim-$round "$why_not"
		notrun cost-train-noshim-$round "$why_not"
	fi
done

# (f) the shim changes nothing: same output, errors and exit code with it as without.
record same-driver-shim 5 "driver calls incl. refusals, shim" -- python3 "$W/driver_alloc.py" pattern
record same-driver-noshim 5 "the same, no shim" --no-shim -- python3 "$W/driver_alloc.py" pattern
if [ "$TORCH" = yes ]; then
	record same-torch-shim 7 "seeded forward/backward, OOM, bad device; shim" -- python3 "$W/determinism.py"
	record same-torch-noshim 7 "the same, no shim" --no-shim -- python3 "$W/determinism.py"
else
	notrun same-torch-shim "$why_not"
	notrun same-torch-noshim "$why_not"
fi

python3 "$KIT/analyze.py" "$OUTDIR"
rc=$?
echo "run.sh: $(elapsed) s; summary in $OUTDIR/summary.md"
exit $rc
