package replay

import (
	"math"
	"sort"
	"time"
)

// Result is one policy's outcome on one workload.
type Result struct {
	Policy string
	// Detail says what the policy ran with (e.g. the static layout chosen).
	Detail string
	Jobs   int
	// Makespan is when the last job completed, in seconds from zero.
	Makespan float64
	// Throughput is jobs per second over the makespan.
	Throughput float64
	// MeanJCT and P95JCT are job completion times (completion − arrival).
	MeanJCT, P95JCT float64
	// MemUtil is the memory jobs actually held, integrated over time, over
	// all GPUs' memory for the whole makespan.
	MemUtil float64
	// Reconfigs counts NVML creates and destroys (a static layout's
	// creates included).
	Reconfigs int
	// Restarts counts runs killed by an OOM or moved by the predictor, and
	// LostWork the seconds those runs had run.
	Restarts int
	// Marks counts the restarts the predictor asked for before an OOM.
	Marks    int
	LostWork float64
	// Waits counts the times a job offered to every node had to wait;
	// Replaceable those where some GPU's free and idle space could hold it
	// (re-placing idle instances would have served it), Fragmented those
	// where only moving instances in use would have. Reservations counts
	// the GPUs held for a starving job.
	Waits, Replaceable, Fragmented, Reservations int
	// LowerBound is LowerBound's makespan bound and Ratio Makespan over it.
	LowerBound, Ratio float64
	// Runs lists every run in the order they ended; Completions is each
	// job's completion time, in input order.
	Runs        []RunRecord
	Completions []float64
	// Wall is the real time the simulation took.
	Wall time.Duration

	memSeconds float64
}

// StepsPerJob is NVML creates and destroys per run served (restarts count
// as runs).
func (r *Result) StepsPerJob() float64 {
	if len(r.Runs) == 0 {
		return 0
	}
	return float64(r.Reconfigs) / float64(len(r.Runs))
}

// percentile is the nearest-rank q-quantile.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// LowerBound is a makespan no policy can beat, in FAR's manner: every job
// needs at least its minimum slice-seconds (over the profiles that hold its
// peak), and the cluster offers slices × GPUs per second. MIG adds a second
// resource: instances on a GPU hold disjoint memory slots, so the jobs'
// minimum slot-seconds over the cluster's slots bound it too, and the
// larger of the two counts. Arrivals sharpen it: the work arriving at or
// after time a cannot finish before a plus that work over the cluster's
// slices (or slots), and no job finishes before its arrival plus its
// shortest run time. Reconfiguration time and restarts are left out, so the
// bound is optimistic for every policy alike.
func LowerBound(jobs []Job, model *Model, gpus int) float64 {
	if len(jobs) == 0 || gpus <= 0 {
		return 0
	}
	slices := float64(model.Slices * gpus)
	slots := float64(model.Slots * gpus)
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return jobs[order[a]].Arrival < jobs[order[b]].Arrival })
	lb, sliceWork, slotWork := 0.0, 0.0, 0.0
	for k := len(order) - 1; k >= 0; k-- {
		j := &jobs[order[k]]
		sliceWork += model.MinSliceSeconds(j)
		slotWork += model.MinSlotSeconds(j)
		lb = max(lb, j.Arrival+sliceWork/slices, j.Arrival+slotWork/slots, j.Arrival+model.MinRuntime(j))
	}
	return lb
}
