package replay

import (
	"fmt"
	"math"
)

// GiB is 2^30 bytes; workload memory is written in GiB for people.
const GiB = 1 << 30

// Job is one unit of work to place.
type Job struct {
	// ID names the job in tables and errors; it must be unique.
	ID string
	// Arrival is when the job is submitted, in seconds from the start.
	Arrival float64
	// FullRuntime is the run time on the whole GPU (all compute slices), in
	// seconds.
	FullRuntime float64
	// Scaling says how run time grows on fewer slices: on k of the GPU's S
	// slices a run takes FullRuntime·(S/k)^Scaling. 1 is compute-bound (half
	// the slices, twice the time), 0 is memory-bound (any instance runs it
	// as fast as the whole GPU).
	Scaling float64
	// Mem is the memory the job holds as it progresses.
	Mem Memory
	// Declared is the memory the user asks for (the request, or the
	// migpro.dev/gpu-memory annotation). Baselines request the tightest
	// profile holding it; too little means an OOM and a restart.
	Declared uint64
	// Profile, when set, is the profile the user requests by name (a pod
	// asking for nvidia.com/mig-2g.10gb); it wins over Declared for every
	// policy but sequential (whole GPU) and migpro+predict (the estimator).
	Profile string
	// Key groups runs of the same workload for the estimator's history.
	Key string
	// PCIe is the job's PCIe bandwidth demand in GB/s; above zero the job is
	// PCIe-heavy and shares its GPU's bandwidth with the other heavy runs.
	PCIe float64
	// Iters is how many memory samples a run reports over its length (its
	// iterations); the predictor sees one per iteration. Default 100.
	Iters int

	// at pins a job of the planner's forward simulation (lookahead.go) to where
	// its run is now.
	at *runsAt
}

// Memory is a job's memory as a function of its progress p in [0, 1]: Start
// until GrowFrom, then linear growth to Peak at GrowTo, then Peak. A fixed
// job has Start == Peak. Bytes include the CUDA context: they are what the
// instance must hold.
type Memory struct {
	Start, Peak      uint64
	GrowFrom, GrowTo float64
}

// Fixed is a job that holds the same memory throughout.
func Fixed(b uint64) Memory { return Memory{Start: b, Peak: b, GrowTo: 1} }

// Growing reports whether memory rises during the run.
func (m Memory) Growing() bool { return m.Peak > m.Start }

// At is the memory held at progress p.
func (m Memory) At(p float64) float64 {
	if !m.Growing() || p <= m.GrowFrom {
		return float64(m.Start)
	}
	if p >= m.GrowTo {
		return float64(m.Peak)
	}
	return float64(m.Start) + float64(m.Peak-m.Start)*(p-m.GrowFrom)/(m.GrowTo-m.GrowFrom)
}

// minOOMProgress is where a job whose memory never fits at all fails: while
// loading, not at time zero, so a run always takes some time.
const minOOMProgress = 0.005

// OOMAt is the progress at which the job first needs more than capacity, and
// false when it never does.
func (m Memory) OOMAt(capacity uint64) (float64, bool) {
	if m.Peak <= capacity {
		return 0, false
	}
	if m.Start > capacity {
		return minOOMProgress, true
	}
	p := m.GrowFrom + (m.GrowTo-m.GrowFrom)*float64(capacity-m.Start)/float64(m.Peak-m.Start)
	return max(p, minOOMProgress), true
}

// Runtime is the run time on slices of a GPU with gpuSlices compute slices.
func (j *Job) Runtime(slices, gpuSlices int) float64 {
	if slices >= gpuSlices || j.Scaling == 0 {
		return j.FullRuntime
	}
	return j.FullRuntime * math.Pow(float64(gpuSlices)/float64(slices), j.Scaling)
}

// Heavy reports whether the job is PCIe-heavy.
func (j *Job) Heavy() bool { return j.PCIe > 0 }

func (j *Job) iters() int {
	if j.Iters <= 0 {
		return 100
	}
	return j.Iters
}

// Validate checks one job on its own; largest is the most memory any
// instance offers.
func (j *Job) Validate(largest uint64) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("job %q: "+format, append([]any{j.ID}, args...)...)
	}
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	switch {
	case j.ID == "":
		return fmt.Errorf("job with empty id")
	case !finite(j.Arrival) || j.Arrival < 0:
		return bad("arrival %v: want a finite time ≥ 0", j.Arrival)
	case !finite(j.FullRuntime) || j.FullRuntime <= 0:
		return bad("full-GPU run time %v: want a finite time > 0", j.FullRuntime)
	case !finite(j.Scaling) || j.Scaling < 0 || j.Scaling > 1:
		return bad("scaling %v: want 0 (memory-bound) to 1 (compute-bound)", j.Scaling)
	case j.Mem.Peak == 0:
		return bad("peak memory is zero")
	case j.Mem.Start > j.Mem.Peak:
		return bad("memory starts at %.2f GiB above its peak %.2f GiB", gib(j.Mem.Start), gib(j.Mem.Peak))
	case !finite(j.Mem.GrowFrom) || !finite(j.Mem.GrowTo) || j.Mem.GrowFrom < 0 || j.Mem.GrowTo > 1 ||
		(j.Mem.Growing() && j.Mem.GrowFrom >= j.Mem.GrowTo):
		return bad("growth from %v to %v: want 0 ≤ from < to ≤ 1", j.Mem.GrowFrom, j.Mem.GrowTo)
	case j.Mem.Peak > largest:
		return bad("peak %.2f GiB is more than the largest instance (%.2f GiB)", gib(j.Mem.Peak), gib(largest))
	case !finite(j.PCIe) || j.PCIe < 0:
		return bad("PCIe demand %v GB/s: want ≥ 0", j.PCIe)
	case j.Iters < 0 || j.Iters > 100000:
		return bad("iterations %d: want 1 to 100000 (0 for the default)", j.Iters)
	}
	return nil
}

// ValidateAll checks every job and that ids are unique.
func ValidateAll(jobs []Job, largest uint64) error {
	if len(jobs) == 0 {
		return fmt.Errorf("no jobs")
	}
	seen := make(map[string]bool, len(jobs))
	for i := range jobs {
		if err := jobs[i].Validate(largest); err != nil {
			return err
		}
		if seen[jobs[i].ID] {
			return fmt.Errorf("job id %q appears twice", jobs[i].ID)
		}
		seen[jobs[i].ID] = true
	}
	return nil
}

func gib(b uint64) float64 { return float64(b) / GiB }
