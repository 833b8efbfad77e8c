package replay

import "sort"

// enqueue adds a job to the wait queue in the policy's order, or in batch
// order while the queue is in it.
func (e *engine) enqueue(j *jobState) {
	if e.batchAt >= 0 {
		j.key = e.batchKey(j)
	} else {
		j.key = e.orderKey(j)
	}
	e.insert(j)
	j.needAll = true
	j.waitSince = e.now
	e.fresh = true
}

// orderKey is j's place in the policy's order.
func (e *engine) orderKey(j *jobState) [4]float64 {
	switch e.pol.Order {
	case SmallFirst:
		return [4]float64{float64(j.profile.Slices), float64(j.profile.Memory), j.job.Arrival, float64(j.idx)}
	case LargeFirst:
		return [4]float64{-float64(j.profile.Slices), -float64(j.profile.Memory), j.job.Arrival, float64(j.idx)}
	}
	return [4]float64{j.job.Arrival, float64(j.idx)}
}

// insert puts j into the queue at the place its key gives.
func (e *engine) insert(j *jobState) {
	i := sort.Search(len(e.queue), func(i int) bool { return less(j.key, e.queue[i].key) })
	e.queue = append(e.queue, nil)
	copy(e.queue[i+1:], e.queue[i:])
	e.queue[i] = j
}

func less(a, b [4]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// serve offers waiting jobs to nodes: new jobs to every node, the others
// only to nodes where something was released since they last waited.
func (e *engine) serve() error {
	anyDirty := false
	for _, d := range e.dirty {
		anyDirty = anyDirty || d
	}
	if !anyDirty && !e.fresh {
		return nil
	}
	e.scan++
	var dirty []int
	for n, d := range e.dirty {
		if d {
			dirty = append(dirty, n)
		}
		e.dirty[n] = false
	}
	e.fresh = false
	e.resize()
	e.orderBatch()
	if err := e.planQueue(); err != nil {
		return err
	}
	if e.planDue {
		if err := e.plan(); err != nil {
			return err
		}
	}
	all := make([]int, len(e.nodes))
	for n := range all {
		all[n] = n
	}
	if e.pol.PackFirst {
		if err := e.servePacked(dirty, all); err != nil {
			return err
		}
	}
	keep := e.queue[:0]
	blocked := false
	for i, j := range e.queue {
		if blocked {
			keep = append(keep, j)
			continue
		}
		if e.pol.Order == FIFO && i > 0 {
			j.needAll = true // it was waiting behind the order, not for room
		}
		nodes := dirty
		if j.needAll {
			nodes = all
		}
		ok, err := e.placeOrWiden(j, nodes, nil)
		if err != nil {
			return err
		}
		if !ok && e.pol.Reserve {
			if ok, err = e.backfill(j); err != nil {
				return err
			}
		}
		if ok {
			if err := e.placed(j); err != nil {
				return err
			}
			continue
		}
		if j.needAll && e.pl != nil && e.pol.Kind != Static {
			e.classifyWait(j)
		}
		j.needAll = false
		keep = append(keep, j)
		if e.pol.Order == FIFO {
			blocked = true
		}
	}
	e.keepQueue(keep)
	return nil
}

// resize gives each waiting job not yet run the profile its workload's
// history now asks for, when earlier runs of that workload have shown,
// since it queued, that its first profile is too small. It runs before
// anything in the scan can start a job.
func (e *engine) resize() {
	if e.pred == nil {
		return
	}
	for _, j := range e.queue {
		if j.attempts > 0 || j.sized == e.pred.learned {
			continue
		}
		if p := e.pred.initial(j.job); p.Memory > j.profile.Memory {
			j.profile, j.needAll = p, true
		}
		j.sized = e.pred.learned
	}
}

// servePacked is a scan's first pass under PackFirst: it starts, in queue
// order, the waiting jobs whose placement strands no compute slice.
func (e *engine) servePacked(dirty, all []int) error {
	e.packWant = e.wantedNow()
	keep := e.queue[:0]
	for _, j := range e.queue {
		nodes := dirty
		if j.needAll {
			nodes = all
		}
		ok, err := e.placeOrWiden(j, nodes, e.strands)
		if err != nil {
			return err
		}
		if !ok {
			keep = append(keep, j)
			continue
		}
		if err := e.placed(j); err != nil {
			return err
		}
	}
	e.keepQueue(keep)
	return nil
}

// placeIf offers j to nodes and starts it on the best one that can take it,
// unless skip (when set) refuses that best offer: then j waits.
func (e *engine) placeIf(j *jobState, nodes []int, skip func(offer, *jobState) bool) (bool, error) {
	p := e.model.rank(j.profile.Name)
	pinned := j.job.at != nil
	if pinned {
		// A run of the planner's forward simulation starts only where it
		// runs now. Its "no" on another node says nothing about the node's
		// room, so it must not mark the node full for the scan: that hid
		// its own node from the pinned runs after it, and a waiting job
		// then took their slots (the multi-node failure of migpro+plan).
		nodes = []int{j.job.at.node}
	}
	var best offer
	found := false
	for _, n := range nodes {
		if !pinned && e.memo[p][n] == e.scan {
			continue
		}
		o, ok, err := e.pl.plan(j, n)
		if err != nil {
			return false, err
		}
		if !ok {
			if !pinned {
				e.memo[p][n] = e.scan
			}
			continue
		}
		if !found || e.pl.better(o, best) {
			best, found = o, true
		}
	}
	if !found || (skip != nil && skip(best, j)) {
		return false, nil
	}
	g, err := e.pl.commit(j, best)
	if err != nil {
		return false, err
	}
	e.grant(j, g)
	return true, nil
}

// keepQueue makes keep, a prefix-built subset of the queue's own backing
// array, the queue, and clears the slots it no longer uses.
func (e *engine) keepQueue(keep []*jobState) {
	for i := len(keep); i < len(e.queue); i++ {
		e.queue[i] = nil
	}
	e.queue = keep
}
