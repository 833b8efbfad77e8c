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
	// Nodes is how many nodes the cluster had: on more than one, which node
	// serves a request is the replay's choice, not the agent's.
	Nodes int
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
	// StartWaits is the arrival-to-start time by request size, and
	// Stranded each GPU's stranded compute slices averaged over the
	// makespan (metrics.go).
	StartWaits []SizeWait
	Stranded   []float64
	// StrandedOverTime is each GPU's stranded compute slices over time:
	// a point at every change, the last holding to the makespan.
	StrandedOverTime [][]StrandPoint
	// FragmentedWaits lists the fragmentation waits (Fragmented), each with
	// the instances in the way.
	FragmentedWaits []FragmentedWait

	memSeconds float64
}

// SimulatorOnly reports whether the result is the simulator's and not the
// agent's: its policy is one the agent's --policy does not offer, or the
// cluster had more than one node, where the replay picks the node (the
// agent places within its own node; the cluster scheduler picks the node).
func (r *Result) SimulatorOnly() bool {
	return simulatorOnly(r.Policy) || r.Nodes > 1
}

// starred is the policy's name as the tables and charts show it: marked
// " *" when the result is simulator only.
func (r *Result) starred() string { return star(r.Policy, r.SimulatorOnly()) }

// star marks a name " *" when what it names is simulator only, as every
// table and chart of the replay does.
func star(name string, simulatorOnly bool) string {
	if simulatorOnly {
		return name + " *"
	}
	return name
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

// LowerBound is a makespan no policy can beat. MIG gives a GPU two
// resources: S compute slices and M memory slots, and the instances running
// on it at any moment use at most all of each. So for any weight λ in
// [0, 1], an instance of s slices and m slots uses at most one GPU's worth
// of λ·s/S + (1−λ)·m/M, and a job's cheapest profile for that weighted use
// (over the profiles that hold its peak, weighted use × run time there)
// is the least GPU-seconds it can take. Summed over the jobs and divided by
// the GPUs, that is a bound for every λ; the largest over a grid of λ counts.
// λ = 1 alone is the slice bound, λ = 0 the memory-slot bound (a 1g.10gb on
// an A100 uses one of 7 slices but two of 8 slots, so four at once fill it);
// weights between them are sharper when a job's cheapest profile for slices
// is not its cheapest for slots, since it must run on one profile for both.
// On a mixed node, a job only one model can hold (a 40 GB request beside
// 40 GB A100s fits only the H100s) must run on that model's GPUs, so those
// jobs' use over those GPUs bounds it as well. Arrivals sharpen each bound:
// the work arriving at or after time a cannot finish before a plus that work
// over its capacity, and no job finishes before its arrival plus its
// shortest run time. Reconfiguration time and restarts are left out, so the
// bound is optimistic for every policy alike.
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
				lb = max(lb, p.add(j, model.Slices))
			}
		}
		lb = max(lb, j.Arrival+model.MinRuntime(j))
	}
	return lb
}

// boundSteps is how finely the weight λ between slices and memory slots is
// tried: λ = 0, 1/boundSteps, …, 1. Every λ gives a valid bound, so a
// coarser grid only loosens it.
const boundSteps = 32

// boundPool is a set of GPUs and the work only they can do, summed from the
// latest arrival back.
type boundPool struct {
	// models are the pool's GPU models: every model of the node for the
	// whole cluster, which every job counts toward; on a mixed node one
	// model, set in only too, for the jobs no other model can hold.
	models []*Model
	only   *Model
	gpus   float64
	// work is, per λ, the jobs' least weighted GPU-seconds.
	work [boundSteps + 1]float64
}

// add counts j toward the pool and returns the pool's bound for the jobs
// arriving at or after j. nodeSlices is the node's compute slices, which
// run times are given against.
func (p *boundPool) add(j *Job, nodeSlices int) float64 {
	var least [boundSteps + 1]float64
	for k := range least {
		least[k] = math.Inf(1)
	}
	for _, gm := range p.models {
		for _, pr := range gm.Profiles {
			if pr.Memory < j.Mem.Peak {
				continue
			}
			t := j.Runtime(pr.Slices, nodeSlices)
			s, m := float64(pr.Slices)/float64(gm.Slices), float64(pr.Slots)/float64(gm.Slots)
			for k := range least {
				lam := float64(k) / boundSteps
				least[k] = min(least[k], t*(lam*s+(1-lam)*m))
			}
		}
	}
	most := 0.0
	for k := range p.work {
		if !math.IsInf(least[k], 1) {
			p.work[k] += least[k]
		}
		most = max(most, p.work[k])
	}
	return j.Arrival + most/p.gpus
}

// boundPools is the whole cluster and, on a mixed node, each model's GPUs.
func boundPools(model *Model, gpus int) []boundPool {
	pools := []boundPool{{models: model.gpuModels(), gpus: float64(gpus)}}
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
		pools = append(pools, boundPool{models: []*Model{gm}, only: gm, gpus: float64(n * nodes)})
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
