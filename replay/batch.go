package replay

import "sort"

// Shortest expected first in a batch (policies with BatchShortest). While
// jobs keep arriving, the queue is in the policy's order and the planner
// moves a few jobs forward. Once arrivals stop (none for planEvery finished
// runs, and for far longer than the gaps between arrivals so far: a batch
// that arrived at once, or the end of a stream), the queue is a batch known
// in full: nothing else is coming to be served first. Serving it by the
// shortest expected run time first then ends its jobs soonest in total (the
// order that minimises the sum of completion times when one resource serves
// them). The order is redone whenever a finished run changes what is
// expected, and holds until the next arrival, which brings the queue back
// to the policy's order. A job the planner moved to the front keeps its
// place. Expected run times are what history gives (expectedOn: the
// workload's mean on its profile, else the profile's, else every run's),
// so the order is only as good as what has finished.

// batchGaps is how many mean gaps between arrivals must pass without one
// before arrivals count as stopped. Under Poisson arrivals a gap that long
// comes once in e^batchGaps; jobs that all arrive at once have no gap.
const batchGaps = 20

// batchOrdered reports whether the queue is in batch order: arrivals have
// stopped (no arrival for planEvery finished runs, and for batchGaps mean
// gaps between the arrivals so far).
func (e *engine) batchOrdered() bool {
	if !e.pol.BatchShortest || e.quiet < planEvery {
		return false
	}
	gap := 0.0
	if e.arrivals > 1 {
		gap = (e.lastArrival - e.firstArrival) / float64(e.arrivals-1)
	}
	return e.now-e.lastArrival > batchGaps*gap
}

// batchKey is j's place in batch order: shortest expected first, then
// arrival order.
func (e *engine) batchKey(j *jobState) [4]float64 {
	return [4]float64{e.expectedOn(j, j.profile), j.job.Arrival, float64(j.idx)}
}

// orderBatch puts the queue in batch order when it is due, and back in the
// policy's order after an arrival ends a batch.
func (e *engine) orderBatch() {
	ordered := e.batchOrdered()
	switch {
	case ordered && e.keyRuns.count != e.batchAt:
		e.batchAt = e.keyRuns.count
		e.rekey(e.batchKey)
	case !ordered && e.batchAt >= 0:
		e.batchAt = -1
		e.rekey(e.orderKey)
	}
}

// rekey gives every waiting job but those the planner moved a new key and
// sorts the queue by it.
func (e *engine) rekey(key func(*jobState) [4]float64) {
	for _, j := range e.queue {
		if !moved(j) {
			j.key = key(j)
		}
	}
	sort.SliceStable(e.queue, func(a, b int) bool { return less(e.queue[a].key, e.queue[b].key) })
}
