package replay

import (
	"container/heap"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/partitioner/geometry"
)

// jobState is a job's progress through the engine.
type jobState struct {
	job     *Job
	idx     int
	profile Profile // what it asks for now
	// queue bookkeeping: its sort key, and whether it must be offered to
	// every node (new, restarted, or passed over by strict FIFO) rather
	// than only to nodes that changed.
	key       [4]float64
	waitSince float64 // when it last entered the queue
	// sized is what the estimator's history had learned (sizer.learned)
	// when the job's first profile was last chosen.
	sized   uint64
	needAll bool
	// began is whether a run of the job has started, startedAt when the
	// first did and firstProfile what it asked for then (start-wait
	// metrics: a request served on a larger or wider instance counts by
	// the profile it asked for).
	began        bool
	startedAt    float64
	firstProfile string
	attempts     int
	done         bool
	completion   float64
}

type evKind uint8

const (
	evArrive evKind = iota
	evStart
	evMilestone
)

type event struct {
	t    float64
	seq  uint64
	kind evKind
	j    *jobState
	r    *run
	gen  uint64
}

type evHeap []event

func (h evHeap) Len() int { return len(h) }
func (h evHeap) Less(a, b int) bool {
	if h[a].t != h[b].t {
		return h[a].t < h[b].t
	}
	return h[a].seq < h[b].seq
}
func (h evHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *evHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *evHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// engine is one policy's simulation.
type engine struct {
	cfg   Config
	pol   Strategy
	model *Model
	nodes []*node
	pl    placer
	pred  *sizer

	events evHeap
	seq    uint64
	now    float64

	queue []*jobState
	dirty []bool
	fresh bool
	// memo[p][n] == scan marks that profile rank p must wait on node n for
	// the rest of this scan: capacity only shrinks while a scan places jobs.
	memo [][]uint64
	scan uint64

	jobs []*jobState
	resv *reservation
	// profileRuns is the mean run time per profile, and over every run,
	// of the runs finished so far; keyRuns per workload and profile
	// (migpro+plan's expected run times).
	profileRuns, keyRuns means
	// packWant is the profiles waiting at the scan's start (PackFirst), and
	// packShapes their shapes per GPU model, by want.
	packWant   uint64
	packShapes map[shapeKey]geometry.ShapeSet
	// quiet counts the runs finished since the last arrival: the planner
	// also plans at every planEvery-th of them, so a batch, whose jobs all
	// arrive at once, is planned too; it is also one sign that arrivals
	// have stopped (batch.go). batchAt is keyRuns.count when the queue was
	// last put in batch order, -1 when it is not.
	quiet   int
	batchAt int
	// arrivals counts arrivals, the first and the last of them at
	// firstArrival and lastArrival; planDue asks the next pass to plan.
	arrivals                  int
	firstArrival, lastArrival float64
	planDue                   bool
	active                    map[*run]bool
	// ready is when each instance's create finished, by UUID.
	ready map[string]float64
	res   *Result
}

func (e *engine) push(ev event) {
	e.seq++
	ev.seq = e.seq
	heap.Push(&e.events, ev)
}

// Run simulates jobs under one policy. A static policy without a layout
// tries every layout and returns the best.
func Run(jobs []Job, cfg Config, pol Strategy) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	model, err := LoadModel(cfg.Model)
	if err != nil {
		return nil, err
	}
	if err := ValidateAll(jobs, model.Largest()); err != nil {
		return nil, err
	}
	for i := range jobs {
		if _, ok := model.Profile(jobs[i].Profile); jobs[i].Profile != "" && !ok {
			return nil, fmt.Errorf("job %q: %s offers no profile %q (offered: %s)", jobs[i].ID, model.Name, jobs[i].Profile, strings.Join(model.names(), ", "))
		}
	}
	if pol.Kind == Static && pol.Layout == "" {
		return runBestLayout(jobs, cfg, pol, model)
	}
	return runOnce(jobs, cfg, pol, model)
}

func runBestLayout(jobs []Job, cfg Config, pol Strategy, model *Model) (*Result, error) {
	wall := time.Now()
	var best *Result
	var tried []string
	for _, l := range Layouts() {
		p := pol
		p.Layout = l.Name
		r, err := runOnce(jobs, cfg, p, model)
		if err != nil {
			if errors.As(err, new(infeasibleError)) {
				continue
			}
			return nil, err
		}
		tried = append(tried, l.Name)
		if best == nil || r.Makespan < best.Makespan {
			best = r
		}
	}
	if best == nil {
		return nil, fmt.Errorf("policy %s: no static layout can run every job", pol.Name)
	}
	best.Detail = fmt.Sprintf("best of %d layouts: %s", len(tried), best.Detail)
	best.Wall = time.Since(wall) // every layout tried, not just the best
	return best, nil
}

// infeasibleError means a static layout cannot run some job at all.
type infeasibleError struct{ msg string }

func (e infeasibleError) Error() string { return e.msg }

func runOnce(jobs []Job, cfg Config, pol Strategy, model *Model) (*Result, error) {
	wall := time.Now()
	if pol.Plan && cfg.GPUs() == 1 {
		// On a single GPU a reservation for a whole-GPU request drains
		// everything while the queue waits, and without reservations the
		// planner's moves keep passing over whole-GPU requests: a policy
		// with Plan serves there as migpro does, with its PackFirst
		// (docs/replay-policies.md has the measurements).
		pol.Plan, pol.Reserve = false, false
	}
	e := &engine{cfg: cfg, pol: pol, model: model, batchAt: -1, active: map[*run]bool{}, ready: map[string]float64{}}
	clock := func() time.Time { return time.Unix(0, 0).Add(time.Duration(e.now * float64(time.Second))) }
	nodes, err := newCluster(model, cfg.Nodes, cfg.GPUsPerNode, cfg.Seed, clock, func(nd *node) partitioner.Policy {
		var base partitioner.Policy = partitioner.Migpro{}
		switch pol.Kind {
		case FirstFit, NvidiaDRA:
			base = partitioner.FirstFit{}
		case HAMi:
			base = hamiPolicy{nd: nd}
		case Reachability:
			base = partitioner.Reachability{}
		}
		if pol.PCIeAware {
			return pcieAware{base: base, ctx: nd.pcie}
		}
		return base
	})
	if err != nil {
		return nil, err
	}
	defer closeNodes(nodes)
	e.nodes = nodes
	e.dirty = make([]bool, len(nodes))
	e.memo = make([][]uint64, len(model.sizes)+1)
	for i := range e.memo {
		e.memo[i] = make([]uint64, len(nodes))
	}
	e.res = &Result{Policy: pol.Name, Jobs: len(jobs), Nodes: cfg.Nodes}
	switch pol.Kind {
	case Static:
		if err := e.setupStatic(jobs); err != nil {
			return nil, err
		}
	default:
		e.pl = &dynamic{nodes: nodes, model: model, kind: pol.Kind, pcieAware: pol.PCIeAware, destroyAtEnd: pol.DestroyAtEnd,
			holding: pol.Holding()}
		e.res.Detail = map[Kind]string{FirstFit: "first-fit", Reachability: "reachability", Migpro: "demand-aware",
			NvidiaDRA: "baseline model, simulator only: first GPU, lowest start, destroyed at end",
			HAMi:      "baseline model, simulator only: largest free run, 1g/3g from the top, destroyed at end"}[pol.Kind]
		if e.pl.(*dynamic).holding {
			e.res.Detail += ", or larger" // the local API's AllocRequest.Larger
		}
		if pol.ReserveAfter > 0 {
			e.res.Detail += fmt.Sprintf(", reserves after %g s (--reserve-after)", pol.ReserveAfter)
		}
		if pol.ReserveRunFactor > 0 {
			e.res.Detail += fmt.Sprintf(", reserves after %g× the mean run", pol.ReserveRunFactor)
		}
		if pol.Order != Backfill {
			e.res.Detail += ", " + pol.Order.String()
		}
		if pol.Plan {
			e.res.Detail += ", queue planned"
		}
		if pol.Widen {
			e.res.Detail += ", widened onto idle slices"
		}
	}
	if pol.Predict || pol.Learn {
		dir, err := os.MkdirTemp("", "migpro-simulate-history-")
		if err != nil {
			return nil, fmt.Errorf("history store: %w", err)
		}
		defer os.RemoveAll(dir)
		if e.pred, err = newSizer(model, dir, cfg.Seed, pol.Predict); err != nil {
			return nil, err
		}
		if pol.Predict {
			e.res.Detail += ", estimator+predictor"
		} else {
			e.res.Detail += ", workload history, predictor on declared memory"
		}
	}
	if pol.PCIeAware {
		e.res.Detail += ", PCIe-aware"
	}
	for i := range jobs {
		js := &jobState{job: &jobs[i], idx: i}
		e.jobs = append(e.jobs, js)
		e.push(event{t: jobs[i].Arrival, kind: evArrive, j: js})
	}
	if err := e.loop(); err != nil {
		return nil, fmt.Errorf("policy %s: %w", pol.Name, err)
	}
	e.finish(jobs)
	e.res.Wall = time.Since(wall)
	return e.res, nil
}

func (e *engine) setupStatic(jobs []Job) error {
	l, err := LayoutByName(e.pol.Layout)
	if err != nil {
		return err
	}
	st, steps, err := newStatic(e.nodes, e.model, l)
	if err != nil {
		return err
	}
	// Every job must find an instance holding both its first request and
	// its peak; restarts then only ask for sizes up to the one holding the
	// peak, which the layout has.
	for i := range jobs {
		need := max(jobs[i].Mem.Peak, e.initialProfile(&jobs[i]).Memory)
		if st.largest() < need {
			return infeasibleError{fmt.Sprintf("layout %s: largest instance %.1f GiB cannot hold job %s (%.1f GiB)",
				l.Name, gib(st.largest()), jobs[i].ID, gib(need))}
		}
	}
	// The layout is applied before the first job, but on the same
	// serialised NVML queue: the first jobs wait for it.
	for n, nd := range e.nodes {
		for _, g := range nd.gpus {
			for _, s := range steps[g.global] {
				e.res.Reconfigs++
				if p, ok := e.model.Profile(s.Profile); ok && !e.cfg.NoNVMLCost {
					g.nvmlFree += NVMLCost(p.Slices, e.model.Slices)
				}
				for _, si := range st.insts[n] {
					if si.gpu == s.GPU && si.place == s.Placement {
						e.ready[si.uuid] = g.nvmlFree
					}
				}
			}
		}
	}
	e.pl = st
	e.res.Detail = "layout " + l.Name
	return nil
}

func (e *engine) loop() error {
	for e.events.Len() > 0 {
		t := e.events[0].t
		e.now = t
		for e.events.Len() > 0 && e.events[0].t == t {
			ev := heap.Pop(&e.events).(event)
			if err := e.handle(ev); err != nil {
				return err
			}
		}
		if err := e.serve(); err != nil {
			return err
		}
		if e.cfg.Check {
			if err := e.check(); err != nil {
				return fmt.Errorf("at t=%.3f s: %w", e.now, err)
			}
		}
	}
	for _, j := range e.jobs {
		if !j.done {
			return fmt.Errorf("job %s never ran (asking for %s)", j.job.ID, j.profile.Name)
		}
	}
	return nil
}

func (e *engine) handle(ev event) error {
	switch ev.kind {
	case evArrive:
		j := ev.j
		j.profile = e.initialProfile(j.job)
		if e.pred != nil {
			j.sized = e.pred.learned
		}
		e.quiet = 0
		e.arrivals++
		if e.arrivals == 1 {
			e.firstArrival = e.now
		}
		e.lastArrival = e.now
		e.enqueue(j)
		if e.pol.Plan {
			e.planDue = e.planDue || e.arrivals%planEvery == 0
		}
	case evStart:
		e.begin(ev.r)
	case evMilestone:
		if ev.gen != ev.r.gen || !e.active[ev.r] {
			return nil // rescheduled since
		}
		return e.milestone(ev.r)
	}
	return nil
}

func (e *engine) initialProfile(j *Job) Profile {
	if e.pol.FullGPU {
		return e.model.Full
	}
	if e.pred != nil {
		return e.pred.initial(j)
	}
	return e.model.asked(j)
}

func declared(j *Job) uint64 {
	if j.Declared == 0 {
		return j.Mem.Peak
	}
	return j.Declared
}
