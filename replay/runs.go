package replay

import (
	"fmt"
	"math"

	"github.com/migpro/migpro/partitioner/geometry"
)

// Outcome is how a run ended.
type Outcome string

const (
	Finished Outcome = "finished"
	// OOM: the run needed more memory than its instance and was killed.
	OOM Outcome = "oom"
	// Marked: the predictor marked the run and it was moved before an OOM.
	Marked Outcome = "marked"
)

// RunRecord is one run of a job on one instance.
type RunRecord struct {
	Job     string
	Node    int
	GPU     int // global GPU index: node × GPUs per node + local index
	Profile string
	Start   int // first memory slot
	Slots   int
	// Granted is when the instance was handed over, Started when the run
	// began (after the NVML work), Ended when it finished or was killed.
	Granted, Started, Ended float64
	Outcome                 Outcome
	// Progress is the fraction of the job done when the run ended.
	Progress float64
}

// run is a job running (or about to run) on an instance.
type run struct {
	j       *jobState
	g       grant
	slot    *gpuSlot
	rec     RunRecord
	started bool
	// progress is the fraction of the job done, advancing at rate per
	// second since last; gen invalidates milestones scheduled before a
	// change of rate.
	progress, rate, last float64
	gen                  uint64
	oomAt, markAt        float64 // progress; above 1 when it never happens
	markProfile          Profile
	markNeed             uint64 // the predictor's forecast peak, bytes
}

func (e *engine) grant(j *jobState, g grant) {
	nd := e.nodes[g.node]
	slot := nd.gpus[g.gpu]
	var start float64
	if len(g.steps) > 0 {
		cost := 0.0
		for _, s := range g.steps {
			if p, ok := e.model.Profile(s.Profile); ok && !e.cfg.NoNVMLCost {
				cost += NVMLCost(p.Slices, e.model.Slices)
			}
		}
		start = max(e.now, slot.nvmlFree) + cost
		slot.nvmlFree = start
		e.res.Reconfigs += len(g.steps)
	} else {
		// A reused or pre-made instance is usable once its own create is
		// done (the static layout's creates queue at time zero).
		start = max(e.now, e.ready[g.uuid])
	}
	e.ready[g.uuid] = start
	j.attempts++
	e.strandTick(slot)
	slot.heldSlices += g.profile.Slices
	slot.heldSlots |= geometry.SlotMask(g.placement)
	r := &run{j: j, g: g, slot: slot, oomAt: 2, markAt: 2, rec: RunRecord{
		Job: j.job.ID, Node: g.node, GPU: slot.global, Profile: g.profile.Name,
		Start: g.placement.Start, Slots: g.placement.Size, Granted: e.now,
	}}
	e.active[r] = true
	if j.job.Heavy() {
		slot.heavyHeld++
	}
	if start > e.now {
		e.push(event{t: start, kind: evStart, r: r})
		return
	}
	e.begin(r)
}

func (e *engine) begin(r *run) {
	r.started, r.last, r.progress = true, e.now, 0
	r.rec.Started = e.now
	if !r.j.began {
		r.j.began, r.j.startedAt, r.j.firstProfile = true, e.now, r.j.profile.Name
	}
	if p, ok := r.j.job.Mem.OOMAt(r.g.profile.Memory); ok {
		r.oomAt = p
	}
	if e.pred != nil && e.pred.watches(r.j.job) {
		if p, prof, need, ok := e.pred.mark(r.j, r.g.profile, r.oomAt); ok {
			r.markAt, r.markProfile, r.markNeed = p, prof, need
		}
	}
	r.slot.busy = append(r.slot.busy, r)
	if r.j.job.Heavy() {
		r.slot.heavyBusy++
		e.rerateHeavy(r.slot)
		return
	}
	e.rerate(r)
}

// advance moves a run's progress to now and adds its memory to the
// utilisation integral (memory is linear in progress between events, so the
// trapezoid is exact unless a growth corner falls inside the interval).
func (e *engine) advance(r *run) {
	dt := e.now - r.last
	if dt <= 0 || !r.started {
		return
	}
	p0 := r.progress
	p1 := min(p0+r.rate*dt, r.target())
	m := r.j.job.Mem
	e.res.memSeconds += dt * (m.At(p0) + m.At(p1)) / 2
	r.progress, r.last = p1, e.now
}

func (r *run) target() float64 { return min(1, r.oomAt, r.markAt) }

// rerate recomputes a run's speed and schedules its next milestone.
func (e *engine) rerate(r *run) {
	e.advance(r)
	slow := 1.0
	if r.j.job.Heavy() {
		share := e.cfg.PCIeMax / float64(r.slot.heavyBusy)
		slow = max(1, e.cfg.PCIeAlpha*r.j.job.PCIe/share)
	}
	r.rate = 1 / (r.j.job.Runtime(r.g.profile.Slices, e.model.Slices) * slow)
	r.gen++
	left := max(0, r.target()-r.progress)
	e.push(event{t: e.now + left/r.rate, kind: evMilestone, r: r, gen: r.gen})
}

func (e *engine) rerateHeavy(slot *gpuSlot) {
	for _, o := range slot.busy {
		if o.j.job.Heavy() {
			e.rerate(o)
		}
	}
}

func (e *engine) milestone(r *run) error {
	e.advance(r)
	target := r.target()
	r.progress = target
	outcome := Finished
	switch {
	case target >= 1:
	case r.markAt <= r.oomAt:
		outcome = Marked
	default:
		outcome = OOM
	}
	return e.end(r, outcome)
}

func (e *engine) end(r *run, outcome Outcome) error {
	delete(e.active, r)
	slot := r.slot
	for i, o := range slot.busy {
		if o == r {
			slot.busy = append(slot.busy[:i], slot.busy[i+1:]...)
			break
		}
	}
	e.strandTick(slot)
	slot.heldSlices -= r.g.profile.Slices
	slot.heldSlots &^= geometry.SlotMask(r.g.placement)
	heavy := r.j.job.Heavy()
	if heavy {
		slot.heavyBusy--
		slot.heavyHeld--
	}
	if err := e.pl.release(r.g); err != nil {
		return err
	}
	if e.pol.DestroyAtEnd {
		// The destroy queues on the GPU's NVML like any other step.
		if !e.cfg.NoNVMLCost {
			slot.nvmlFree = max(e.now, slot.nvmlFree) + NVMLCost(r.g.profile.Slices, e.model.Slices)
		}
		e.res.Reconfigs++
	}
	e.dirty[r.g.node] = true
	if heavy {
		e.rerateHeavy(slot)
	}
	r.rec.Ended, r.rec.Outcome, r.rec.Progress = e.now, outcome, r.progress
	e.res.Runs = append(e.res.Runs, r.rec)
	j := r.j
	if outcome == Finished {
		e.profileRuns.add(r.g.profile.Name, e.now-r.rec.Started)
		e.keyRuns.add(j.job.Key+"\x00"+r.g.profile.Name, e.now-r.rec.Started)
		j.done, j.completion = true, e.now
		e.quiet++
		if e.pol.Plan {
			// With no arrival to plan at (a batch), plan at every
			// planEvery-th run that ends after the last arrival.
			e.planDue = e.planDue || e.quiet%planEvery == 0
		}
		// Under Policy.Predict every peak teaches the history; under
		// Policy.Learn only one above the declaration, so a workload
		// declared correctly keeps what it asked for.
		if e.pred != nil && (e.pred.predict || j.job.Mem.Peak > declared(j.job)) {
			if err := e.pred.learn(j.job.Key, j.job.Mem.Peak, e.now); err != nil {
				return err
			}
		}
		return nil
	}
	e.res.Restarts++
	if outcome == Marked {
		e.res.Marks++
	}
	e.res.LostWork += e.now - r.rec.Started
	// Grow from what the run had: a static layout may have given it more
	// than it asked for, and asking for less than that again is pointless.
	had := r.g.profile
	if j.profile.Memory > had.Memory {
		had = j.profile
	}
	next := e.model.Grow(had)
	if outcome == Marked && r.markProfile.Memory > had.Memory {
		next = r.markProfile
	}
	if e.pred != nil {
		// The key's history learns from the restart, and the next run
		// starts on at least what it now says.
		need := had.Memory + 1
		if outcome == Marked {
			need = max(need, r.markNeed)
		}
		if err := e.pred.learn(j.job.Key, need, e.now); err != nil {
			return err
		}
		if p := e.pred.initial(j.job); p.Memory > next.Memory {
			next = p
		}
	}
	if next.Memory <= had.Memory {
		return fmt.Errorf("job %s ran out of memory on %s, the largest profile", j.job.ID, had.Name)
	}
	j.profile = next
	e.enqueue(j)
	return nil
}

// finish computes the summary metrics.
func (e *engine) finish(jobs []Job) {
	res := e.res
	jct := make([]float64, len(e.jobs))
	res.Completions = make([]float64, len(e.jobs))
	sum := 0.0
	for i, j := range e.jobs {
		res.Completions[i] = j.completion
		res.Makespan = max(res.Makespan, j.completion)
		jct[i] = j.completion - j.job.Arrival
		sum += jct[i]
	}
	res.MeanJCT = sum / float64(len(jct))
	e.userMetrics()
	res.P95JCT = percentile(jct, 0.95)
	if res.Makespan > 0 {
		res.Throughput = float64(len(jobs)) / res.Makespan
		gpus := float64(e.cfg.GPUs())
		res.MemUtil = res.memSeconds / (gpus * float64(e.model.Full.Memory) * res.Makespan)
	}
	res.LowerBound = LowerBound(jobs, e.model, e.cfg.GPUs())
	res.Ratio = res.Makespan / res.LowerBound
	if math.IsNaN(res.Ratio) || math.IsInf(res.Ratio, 0) {
		res.Ratio = 0
	}
}
