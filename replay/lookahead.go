package replay

import (
	"cmp"
	"math"
	"slices"
)

// Planning over the known queue (policy migpro+plan). Arrival order with
// backfill decides who gets room that frees up by who came first. The
// planner looks at what is known when a request arrives, the runs in
// progress and the waiting requests, and asks of each of a few waiting
// requests: if it went to the front of the queue now, when would the
// waiting requests be done? It simulates each answer forward (the same
// partitioner policy on fresh simulated GPUs, every run where it runs now,
// run times as history expects them, no future arrivals) and moves the
// request whose move ends the waiting requests soonest in total, if any
// move beats leaving the order alone. The move holds from that moment; no
// later arrival is known to it.

const (
	// planEvery plans at every planEvery-th arrival, and at every
	// planEvery-th finished run since the last arrival.
	planEvery = 5
	// planCandidates is how many waiting requests a plan tries at the front:
	// half the oldest after the head, half the shortest expected.
	planCandidates = 24
	// planMoves is how many moves one plan may make: after a move it plans
	// again from the new order.
	planMoves = 2
)

// runsAt pins a job of the planner's forward simulation to the place where
// its run is now.
type runsAt struct{ node, gpu, start int }

// means keeps a mean per key and over every value.
type means struct {
	sum   map[string]float64
	n     map[string]int
	total float64
	count int
}

func (m *means) add(k string, v float64) {
	if m.sum == nil {
		m.sum, m.n = map[string]float64{}, map[string]int{}
	}
	m.sum[k] += v
	m.n[k]++
	m.total += v
	m.count++
}

// overall is the mean over every value added; zero before any.
func (m *means) overall() float64 {
	if m.count == 0 {
		return 0
	}
	return m.total / float64(m.count)
}

func (m *means) mean(k string) (float64, bool) {
	if m.n[k] == 0 {
		return 0, false
	}
	return m.sum[k] / float64(m.n[k]), true
}

// expectedOn is how long a run of j on profile p is expected to hold its
// instance: its workload's mean on p over the runs finished so far, else
// what expected gives (p's mean, else every run's).
func (e *engine) expectedOn(j *jobState, p Profile) float64 {
	if v, ok := e.keyRuns.mean(j.job.Key + "\x00" + p.Name); ok {
		return v
	}
	return e.expected(j)
}

// plan runs the planner: up to planMoves times, it moves the waiting job
// whose move helps most to the front of the queue, and stops early when no
// move helps.
func (e *engine) plan() error {
	e.planDue = false
	for range planMoves {
		moved, err := e.planOne()
		if err != nil || !moved {
			return err
		}
	}
	return nil
}

// planOne moves at most one waiting job to the front of the queue and
// reports whether it did. It does nothing before any run has finished
// (nothing is known of run times yet).
func (e *engine) planOne() (bool, error) {
	if len(e.queue) < 2 || e.profileRuns.count == 0 {
		return false, nil
	}
	running := e.runningNow()
	// Each waiting job's expected run time, once per plan.
	expect := make([]float64, len(e.queue))
	for i, j := range e.queue {
		expect[i] = e.expectedOn(j, j.profile)
	}
	best, err := e.forward(running, expect, -1)
	if err != nil {
		return false, err
	}
	move, limit := -1, e.passLimit()
	for _, c := range candidates(expect) {
		if c > limit {
			continue
		}
		v, err := e.forward(running, expect, c)
		if err != nil {
			return false, err
		}
		if v < best-1e-9 {
			best, move = v, c
		}
	}
	if move < 0 {
		return false, nil
	}
	e.res.Moves++
	j := e.queue[move]
	e.queue = slices.Delete(e.queue, move, move+1)
	moveToFront(j, e.res.Moves)
	e.insert(j)
	return true, nil
}

// passLimit is the last queue position a plan may move a job from. While
// no more jobs wait than half the cluster's GPUs, no job is moved past a
// waiting whole-GPU job that was not moved itself: that job waits for one
// GPU to drain, a job moved ahead of it may start on the very GPU that is
// draining, and at such a load the next arrivals keep starting around it by
// backfill, so its wait grows by more than the forward simulation, which
// knows no future arrival, counts. Otherwise any position.
func (e *engine) passLimit() int {
	if len(e.queue) > e.cfg.GPUs()/2 {
		return len(e.queue)
	}
	for i, j := range e.queue {
		if j.profile.Slices >= e.model.Slices && !moved(j) {
			return i
		}
	}
	return len(e.queue)
}

// moveToFront gives j, the planner's n-th move, the key of the very front:
// ahead of jobs moved before it, as the forward simulation had it (later
// moves sort first).
func moveToFront(j *jobState, n int) { j.key = [4]float64{math.Inf(-1), -float64(n)} }

// moved reports whether the planner moved j to the front of the queue,
// where it stays until it is served.
func moved(j *jobState) bool { return math.IsInf(j.key[0], -1) }

// candidates are the queue positions a plan tries at the front, given
// the waiting jobs' expected run times in queue order.
func candidates(expect []float64) []int {
	half := planCandidates / 2
	seen := map[int]bool{}
	var out []int
	for i := 1; i < len(expect) && i <= half; i++ {
		seen[i] = true
		out = append(out, i)
	}
	byRun := make([]int, 0, len(expect)-1)
	for i := 1; i < len(expect); i++ {
		byRun = append(byRun, i)
	}
	slices.SortStableFunc(byRun, func(a, b int) int { return cmp.Compare(expect[a], expect[b]) })
	for _, i := range byRun[:min(len(byRun), half)] {
		if !seen[i] {
			out = append(out, i)
		}
	}
	return out
}

// runningNow is every active run as a job of the forward simulation,
// pinned where it runs and lasting what it is expected to have left (a
// second when it has outrun its expectation), in a fixed order.
func (e *engine) runningNow() []Job {
	var runs []*run
	for r := range e.active {
		runs = append(runs, r)
	}
	slices.SortFunc(runs, func(a, b *run) int {
		return cmp.Or(cmp.Compare(a.g.node, b.g.node), cmp.Compare(a.g.gpu, b.g.gpu),
			cmp.Compare(a.g.placement.Start, b.g.placement.Start))
	})
	out := make([]Job, 0, len(runs))
	for _, r := range runs {
		out = append(out, Job{
			ID: r.j.job.ID, FullRuntime: max(e.left(r), 1), Mem: Fixed(1 << 20),
			Profile: r.g.profile.Name, Key: r.j.job.Key,
			at: &runsAt{node: r.g.node, gpu: r.g.gpu, start: r.g.placement.Start},
		})
	}
	return out
}

// forward simulates the runs in progress and the waiting jobs (e.queue,
// whose expected run times are expect), the one at queue position front
// moved first (-1: the order as it is), and returns the sum of the waiting
// jobs' completion times from now.
func (e *engine) forward(running []Job, expect []float64, front int) (float64, error) {
	jobs := make([]Job, 0, len(running)+len(e.queue))
	jobs = append(jobs, running...)
	add := func(i int) {
		j := e.queue[i]
		jobs = append(jobs, Job{
			ID: j.job.ID, FullRuntime: max(expect[i], 1), Mem: Fixed(1 << 20),
			Profile: j.profile.Name, Key: j.job.Key,
		})
	}
	if front >= 0 {
		add(front)
	}
	for i := range e.queue {
		if i != front {
			add(i)
		}
	}
	cfg := e.cfg
	cfg.NoNVMLCost, cfg.Check = true, false
	r, err := runOnce(jobs, cfg, Strategy{Name: "forward", Kind: e.pol.Kind, PackFirst: e.pol.PackFirst}, e.model)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for _, c := range r.Completions[len(running):] {
		sum += c
	}
	return sum, nil
}
