package tracegen

import (
	"math"
	"math/rand/v2"

	"github.com/migpro/migpro/predictor/trace"
)

// Rates at which the agent sees a container's memory: the shim reports at
// ShimHz and the NVML poller reads the instance at NVMLHz.
const (
	ShimHz = 10.0
	NVMLHz = 1.0
)

// RealFamily is a memory series shaped after what a framework does on the
// GPU, in seconds from the container's start: a CUDA context, then the
// framework's caching-allocator pool. docs/predictor.md cites the framework
// behaviour each one follows.
type RealFamily struct {
	Name string
	// Growing families reach Capacity within Duration; quiet ones never do.
	Growing bool
	// Duration is how long the run lasts, in seconds.
	Duration float64
	// used renders one run.
	used func(r *rand.Rand, d float64) series
}

// series is one rendered run: the CUDA context, and at each 1/ShimHz tick
// the pool's reserved bytes and the driver allocation calls made so far.
type series struct {
	ctx         float64
	pool, calls []float64
}

// Generate renders the family for one seed at rate hz (ShimHz or NVMLHz), as
// the agent feeds the predictor (agent/telemetry.go, onSample):
//
//   - The NVML poller reads the instance once a second, from a seeded phase
//     between two shim ticks: the context plus the pool.
//   - The shim reports the pool at every tick, without the context, and
//     the driver allocation calls so far (Row.Allocs); NVML knows no calls.
//   - Every report, from either source, feeds max(the shim's latest, NVML's
//     latest) at its own time. At NVMLHz only the poller reports: a
//     container without the shim.
//
// Both rates read the same run. A growing run dies at the first tick where
// the context plus the pool exceeds Capacity; that tick is the series' last
// sample at both rates, with the bytes the driver refused (the OOM). A quiet
// run's pool is clamped so that it stays 64 MiB under Capacity.
func (f RealFamily) Generate(seed uint64, hz float64) trace.Trace {
	r := rand.New(rand.NewPCG(seed, 0x7265616c)) // "real"
	run := f.used(r, f.Duration)
	ctx, pool := run.ctx, run.pool
	phase := r.IntN(int(ShimHz))
	c := float64(Capacity)
	end := len(pool)
	for i := range pool {
		if !f.Growing {
			pool[i] = math.Min(pool[i], c-64*mib-ctx)
		}
		if ctx+pool[i] > c {
			end = i
			break
		}
	}
	tr := trace.Trace{Name: f.Name}
	shimOn := hz > NVMLHz
	tr.HasAllocs = shimOn
	var shim, nvml, calls float64
	add := func(t, used float64) {
		tr.Rows = append(tr.Rows, trace.Row{T: t, Used: uint64(math.Max(used, 0)), Allocs: uint64(calls)})
	}
	for i := 0; i < end; i++ {
		if shimOn {
			shim, calls = pool[i], run.calls[i]
			add(float64(i)/ShimHz, math.Max(shim, nvml))
		}
		if (i-phase)%int(ShimHz) == 0 && i >= phase {
			nvml = ctx + pool[i]
			add((float64(i)+0.5)/ShimHz, math.Max(shim, nvml))
		}
	}
	if end < len(pool) {
		add(float64(end)/ShimHz, ctx+pool[end])
	}
	return tr
}

// OOM returns the time of the first sample over Capacity, and false when
// the series never exceeds it.
func OOM(tr trace.Trace) (float64, bool) {
	for _, row := range tr.Rows {
		if row.Used > Capacity {
			return row.T, true
		}
	}
	return 0, false
}
