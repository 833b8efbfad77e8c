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
	// the GPUs held for a starving job, Backfills the jobs started in
	// slots a reservation held, expected to end before it needed them.
	Waits, Replaceable, Fragmented, Reservations, Backfills int
	// Moves counts the waiting jobs the planner moved to the front of the
	// queue (migpro+plan).
	Moves int
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

// LowerBound is a makespan no policy can beat: every job
// needs at least its minimum slice-seconds (over the profiles that hold its
// peak), and the cluster offers slices × GPUs per second. MIG adds a second
// resource: instances on a GPU hold disjoint memory slots, so the jobs'
// minimum slot-seconds over the cluster's slots bound it too. On a mixed
// node, a job only one model can hold (a 40 GB request beside 40 GB A100s
// fits only the H100s) must run on that model's GPUs, so those jobs' work
// over those GPUs bounds it as well. The largest of the bounds counts.
// Arrivals sharpen each: the work arriving at or after time a cannot finish
// before a plus that work over its capacity, and no job finishes before its
// arrival plus its shortest run time. Reconfiguration time and restarts are
// left out, so the bound is optimistic for every policy alike.
func LowerBound(jobs []Job, model *Model, gpus int) float64 {
	if len(jobs) == 0 || gpus <= 0 {
		return 0
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return jobs[order[a]].Arrival < jobs[order[b]].Arrival })
	pools := boundPools(model, gpus)
	lb := 0.0
	for k := len(order) - 1; k >= 0; k-- {
		j := &jobs[order[k]]
		only := onlyModel(model, j)
		for i := range pools {
			if p := &pools[i]; p.only == nil || p.only == only {
				lb = max(lb, p.add(j))
			}
		}
		lb = max(lb, j.Arrival+model.MinRuntime(j))
	}
	return lb
}

// boundPool is a set of GPUs and the work only they can do, summed from the
// latest arrival back.
type boundPool struct {
	// model is the pool's GPU model: the node's for the whole cluster, which
	// every job counts toward; on a mixed node one model's, set in only too,
	// for the jobs no other model can hold.
	model, only         *Model
	slices, slots       float64
	sliceWork, slotWork float64
}

// add counts j toward the pool and returns the pool's bound for the jobs
// arriving at or after j.
func (p *boundPool) add(j *Job) float64 {
	p.sliceWork += p.model.MinSliceSeconds(j)
	p.slotWork += p.model.MinSlotSeconds(j)
	return j.Arrival + max(p.sliceWork/p.slices, p.slotWork/p.slots)
}

// boundPools is the whole cluster and, on a mixed node, each model's GPUs.
func boundPools(model *Model, gpus int) []boundPool {
	pools := []boundPool{{model: model, slices: float64(model.Slices * gpus), slots: float64(model.Slots * gpus)}}
	if model.perGPU == nil {
		return pools
	}
	nodes := gpus / len(model.perGPU)
	for _, gm := range model.gpuModels() {
		n := 0
		for _, x := range model.perGPU {
			if x == gm {
				n++
			}
		}
		pools = append(pools, boundPool{model: gm, only: gm, slices: float64(gm.Slices * n * nodes), slots: float64(gm.Slots * n * nodes)})
	}
	return pools
}

// onlyModel is the one GPU model of a mixed node that can hold j's peak,
// or nil when several can (or the node has one model).
func onlyModel(model *Model, j *Job) *Model {
	if model.perGPU == nil {
		return nil
	}
	var only *Model
	for _, gm := range model.gpuModels() {
		if gm.Largest() < j.Mem.Peak {
			continue
		}
		if only != nil {
			return nil
		}
		only = gm
	}
	return only
}
