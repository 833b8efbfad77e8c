package replay

import (
	"fmt"
	"math/bits"

	"github.com/migpro/migpro/partitioner"
)

// Planning for the known queue (migpro only). Before each scan every node's
// partitioner is told what waits, by profile, so it keeps room for the queue
// while it places; and, under a policy with Reserve, a job that has waited
// longer than starveFactor times its own run time gets a reservation: one GPU is held for its profile (no
// other request reuses or creates there), so releases there add up until it
// fits, while every other GPU keeps serving the rest (backfill).

// starveFactor is how many times its own run time a job may wait before a
// GPU is reserved for it (policies with Reserve).
const starveFactor = 4.0

// reservation is the one standing reservation of a run.
type reservation struct {
	j    *jobState
	node int
	gpu  int
}

// planQueue feeds pending demand and manages the reservation before a scan.
func (e *engine) planQueue() error {
	if e.pol.Kind != Migpro {
		return nil
	}
	counts := map[string]int{}
	for _, j := range e.queue {
		counts[j.profile.Name]++
	}
	if len(counts) == 0 {
		counts = nil
	}
	for _, nd := range e.nodes {
		nd.part.ObservePending(counts)
	}
	if !e.pol.Reserve || e.pol.Order == FIFO || e.resv != nil {
		return nil
	}
	var oldest *jobState
	for _, j := range e.queue {
		if oldest == nil || j.waitSince < oldest.waitSince {
			oldest = j
		}
	}
	if oldest == nil || e.now-oldest.waitSince <= starveFactor*oldest.job.Runtime(oldest.profile.Slices, e.model.Slices) {
		return nil
	}
	// The GPU whose held instances leave the most room clear of the
	// profile's best placement: fewest held slots in its way, then fewest
	// held slices.
	bestN, bestG, bestCost := -1, -1, 0
	for n, nd := range e.nodes {
		for g, gs := range nd.gpus {
			masks := gs.model.masks[oldest.profile.Name]
			if len(masks) == 0 {
				continue // the GPU does not offer the profile
			}
			way := 99
			for _, m := range masks {
				way = min(way, bits.OnesCount16(m&gs.heldSlots))
			}
			cost := way*100 + gs.heldSlices
			if bestN < 0 || cost < bestCost {
				bestN, bestG, bestCost = n, g, cost
			}
		}
	}
	if err := e.nodes[bestN].part.Reserve(&partitioner.Reservation{GPU: bestG, Profile: oldest.profile.Name}); err != nil {
		return fmt.Errorf("node %d: %w", bestN, err)
	}
	e.resv = &reservation{j: oldest, node: bestN, gpu: bestG}
	e.res.Reservations++
	oldest.needAll = true
	return nil
}

// placed clears the reservation when its job got an instance, and marks the
// node changed: the GPU is open to every profile again.
func (e *engine) placed(j *jobState) error {
	if e.resv == nil || e.resv.j != j {
		return nil
	}
	n := e.resv.node
	e.resv = nil
	e.dirty[n] = true
	if err := e.nodes[n].part.Reserve(nil); err != nil {
		return fmt.Errorf("node %d: %w", n, err)
	}
	return nil
}

// classifyWait records why a job offered to every node had to wait: some
// GPU's free and idle space could hold it (re-placing idle instances would
// serve it: the partitioner should have), or some GPU has the slices and
// enough free memory slots but no legal placement clear of held instances
// (only moving instances in use would serve it).
func (e *engine) classifyWait(j *jobState) {
	e.res.Waits++
	replaceable, fragmented := false, false
	for n, nd := range e.nodes {
		for g, gs := range nd.gpus {
			if r := e.resv; r != nil && r.node == n && r.gpu == g && r.j != j {
				continue // held for another job on purpose
			}
			own, offered := gs.model.Profile(j.profile.Name)
			if !offered {
				continue
			}
			if gs.mayFit(j.profile) {
				replaceable = true
			} else if gs.heldSlices+own.Slices <= gs.model.Slices &&
				gs.model.Slots-bits.OnesCount16(gs.heldSlots) >= own.Slots {
				fragmented = true
			}
		}
	}
	if replaceable {
		e.res.Replaceable++
	} else if fragmented {
		e.res.Fragmented++
	}
}
