package main

// doc is a command's help beyond its one-line summary.
type doc struct {
	args    string // after the name in the usage line, e.g. " PROFILE"
	long    string
	example string
	aliases []string
}

var docs = map[string]doc{
	"alloc": {
		args: " PROFILE",
		long: "The agent makes the instance if none is idle, writes its CDI spec and holds it for\n" +
			"the caller until `migctl free`. Pass the printed name to podman --device or to a\n" +
			"containerd CDI device.",
		example: "  migctl alloc 2g.20gb\n" +
			"  podman run --device $(migctl alloc --owner me 1g.10gb) IMAGE\n" +
			"  migctl alloc --output json 1g.5gb",
	},
	"free": {
		args:    " NAME|UUID",
		long:    "Releases an instance got with alloc; the agent destroys it unless it keeps it warm.",
		example: "  migctl free migpro.dev/mig=MIG-0e5d…\n  migctl free MIG-0e5d…",
	},
	"status": {
		long:    "Draws each GPU's slices with the instances on them, and who holds them.",
		example: "  migctl status\n  migctl status --output json\n  MIGPRO_SOCKET=/tmp/agent.sock migctl status",
	},
	"top": {
		long:    "Per container: current and peak GPU memory, the instance's capacity, and the source\n(the shim or NVML).",
		example: "  migctl top\n  migctl top --watch 2s\n  migctl top --output json --watch 1s --count 10",
	},
	"run": {
		args: " IMAGE [ARG…]",
		long: "Runs the container on an instance of --profile through containerd; when the agent's\n" +
			"predictor marks it, stops it and starts it again on the next larger profile.\n" +
			"Everything after IMAGE goes to the container.",
		example: "  migctl run --profile 1g.10gb docker.io/library/python:3 python train.py\n" +
			"  migctl run --profile 2g.20gb --env CUDA_LOG=1 --max-restarts 1 IMAGE",
	},
	"demo": {
		long:    "Act one replays a request stream on a simulated node and draws each placement;\nact two shows a prediction and a move on a real agent.",
		example: "  migctl demo\n  migctl demo --simulate a100-40gb:1 --requests 20 --no-predict",
	},
	"estimate": {
		long:    "From declared memory, a model's parameter count or recorded peaks, picks the\nsmallest profile with room.",
		example: "  migctl estimate --gpu h100-80gb --memory 7Gi\n  migctl estimate --gpu a100-40gb --params 7e9 --output json",
	},
	"plan": {
		args:    " OPERATION…",
		long:    "Runs allocate (PROFILE) and free (-N, the Nth allocation) operations on a simulated\nnode and draws the layout after each.",
		example: "  migctl plan --simulate a100-40gb:2 1g.5gb 3g.20gb -1 4g.20gb\n  migctl plan --simulate a100-40gb:2,h100-80gb:1 --policy first-fit --output json 3g.40gb 1g.10gb",
	},
	"predict": {
		args:    " TRACE_OR_DIR…",
		long:    "Scores the out-of-memory predictor on memory traces: when it marks, how early\nbefore the OOM, and its false marks.",
		example: "  migctl predict --capacity 10Gi predictor/testdata\n  migctl predict --capacity 10Gi --algorithm both --output json trace.csv",
	},
	"replay": {
		long: "Replays a generated or recorded workload under several placement policies on\n" +
			"simulated nodes and compares makespan, job completion time and utilisation.",
		example: "  migctl replay --mix mixed --policies migpro,first-fit\n" +
			"  migctl replay --mix online --simulate a100-40gb:2 --load 0.9 --policies first-fit,migpro,migpro+plan\n" +
			"  migctl replay --simulate a100-40gb:2,h100-80gb:1 --mix stream --output json\n" +
			"  migctl replay --csv jobs.csv --plot charts/",
		aliases: []string{"simulate"},
	},
	"version": {
		example: "  migctl version\n  migctl --version",
	},
}
