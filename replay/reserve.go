package replay

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/partitioner/geometry"
)

// Planning for the known queue (migpro only). Before each scan every node's
// partitioner is told what waits, by profile, so it keeps room for the queue
// while it places; and, under a policy with Reserve, the longest-waiting job,
// once it has waited starveFactor times the mean run time of its profile
// measured so far, gets a reservation (Partitioner.ReserveFor): one placement
// of its profile is held (no other profile reuses or creates over those
// slots), so releases there add up until it fits, while the rest of that GPU
// and every other GPU keep serving the queue (backfill). When the job is
// placed the reservation passes to the next waiting job of the same profile,
// so one drain serves the whole waiting batch of it.

// starveFactor is how many times the mean run time of its profile a job may
// wait before room is reserved for it (policies with Reserve).
const starveFactor = 8.0

// reservation is the one standing reservation of a run.
type reservation struct {
	j       *jobState
	profile string
	node    int
	gpu     int
}

// planQueue feeds pending demand and manages the reservation before a scan.
func (e *engine) planQueue() error {
	if e.agentReserves() && e.pol.Kind != Migpro {
		return e.reserveAsAgent() // reachability: no demand to feed
	}
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
	if e.agentReserves() {
		return e.reserveAsAgent()
	}
	if !e.pol.Reserve || e.pol.Order == FIFO {
		return nil
	}
	if r := e.resv; r != nil {
		if r.j != nil {
			return nil
		}
		for _, j := range e.queue {
			if j.profile.Name == r.profile && (r.j == nil || j.waitSince < r.j.waitSince) {
				r.j = j
			}
		}
		if r.j != nil {
			r.j.needAll = true
			return nil
		}
		e.resv = nil
		e.dirty[r.node] = true
		if err := e.nodes[r.node].part.Reserve(nil); err != nil {
			return fmt.Errorf("node %d: %w", r.node, err)
		}
	}
	var oldest *jobState
	for _, j := range e.queue {
		if oldest == nil || j.waitSince < oldest.waitSince {
			oldest = j
		}
	}
	if oldest == nil {
		return nil
	}
	if exp := e.expected(oldest); exp == 0 || e.now-oldest.waitSince <= starveFactor*exp {
		return nil
	}
	bestN := e.reserveNode(oldest.profile.Name, false)
	rv, err := e.nodes[bestN].part.ReserveFor(oldest.profile.Name)
	if err != nil {
		return fmt.Errorf("node %d: %w", bestN, err)
	}
	bestG := rv.GPU
	e.resv = &reservation{j: oldest, profile: oldest.profile.Name, node: bestN, gpu: bestG}
	e.res.Reservations++
	oldest.needAll = true
	return nil
}

// reserveNode is the node whose GPU is closest to holding profile: fewest
// held slots in the way of one of its placements, then fewest held slices
// (the cluster's choice, the replay's own); the node's partitioner then
// holds the placement on it that drains first (ReserveFor). With
// agentRule only nodes that reserve for starving requests count
// (Partitioner.ReservesForStarving). It is -1 when no node qualifies.
func (e *engine) reserveNode(profile string, agentRule bool) int {
	bestN, bestCost := -1, 0
	for n, nd := range e.nodes {
		if agentRule && !nd.part.ReservesForStarving() {
			continue
		}
		for _, gs := range nd.gpus {
			masks := gs.model.geo.SlotMasks(profile)
			if len(masks) == 0 {
				continue // the GPU does not offer the profile
			}
			way := 99
			for _, m := range masks {
				way = min(way, bits.OnesCount16(m&gs.heldSlots))
			}
			cost := way*100 + gs.heldSlices
			if bestN < 0 || cost < bestCost {
				bestN, bestCost = n, cost
			}
		}
	}
	return bestN
}

// agentReserves reports whether the run reserves as the agent does for its
// local callers with --reserve-after (agent/pending.go): a policy with
// ReserveAfter that models those callers (the holding ones), unless it
// has the replay's own rule (Reserve) or serves strictly in order. Pods
// (Exact) reserve by the same rule only as a simulator-only trial
// (ForPods): the agent does not reserve for them.
func (e *engine) agentReserves() bool {
	d, ok := e.pl.(*dynamic)
	return ok && (d.holding || e.pol.Exact) && (e.pol.ReserveAfter > 0 || e.pol.ReserveRunFactor > 0) && !e.pol.Reserve && e.pol.Order != FIFO
}

// reserveAsAgent is the agent's reservation rule over the wait queue, each
// waiting job being a local caller that keeps asking: one reservation at a
// time, for the job waiting longest once it has waited longer than
// ReserveAfter (partitioner.Starving), on a node with enough GPUs
// to reserve (Partitioner.ReservesForStarving); it ends when its job starts,
// and the next starving job, of any profile, may then get one.
func (e *engine) reserveAsAgent() error {
	if r := e.resv; r != nil {
		if r.j != nil {
			return nil // one reservation at a time
		}
		e.resv = nil
		e.dirty[r.node] = true
		if err := e.nodes[r.node].part.Reserve(nil); err != nil {
			return fmt.Errorf("node %d: %w", r.node, err)
		}
	}
	after := e.pol.ReserveAfter
	if k := e.pol.ReserveRunFactor; k > 0 {
		mean := e.profileRuns.overall()
		if mean == 0 {
			return nil // no run has finished: no measure of how long they last
		}
		after = max(after, k*mean)
	}
	waiters := make([]partitioner.Waiter, 0, len(e.queue))
	byKey := make(map[string]*jobState, len(e.queue))
	for _, j := range e.queue {
		if e.pol.ReserveLarge && 2*j.profile.Slices <= e.model.Slices {
			continue
		}
		k := fmt.Sprintf("%09d", j.idx)
		byKey[k] = j
		waiters = append(waiters, partitioner.Waiter{Key: k, Profile: j.profile.Name, Since: simTime(j.waitSince)})
	}
	w, ok := partitioner.Starving(simTime(e.now), waiters, time.Duration(after*float64(time.Second)))
	if !ok {
		return nil
	}
	n := e.reserveNode(w.Profile, !e.pol.ReserveAnyNode)
	if n < 0 || (e.pol.ReserveNearEmpty && !e.nearEmpty(n, w.Profile)) {
		return nil
	}
	rv, err := e.nodes[n].part.ReserveFor(w.Profile)
	if err != nil {
		return fmt.Errorf("node %d: %w", n, err)
	}
	if e.pol.ReserveOracle {
		if rv, err = e.reserveDrainingFirst(n, w.Profile); err != nil {
			return err
		}
	}
	j := byKey[w.Key]
	e.resv = &reservation{j: j, profile: w.Profile, node: n, gpu: rv.GPU}
	e.res.Reservations++
	j.needAll = true
	return nil
}

// simTime is a replay time in seconds as a clock reading (the engine's
// clock starts at the Unix epoch).
func simTime(t float64) time.Time {
	return time.Unix(0, 0).Add(time.Duration(t * float64(time.Second)))
}

// placed hands the reservation on when its job got an instance: the next
// scan gives it to the longest-waiting job of the same profile (the known
// queue is served as a batch, so one drain serves every such job waiting),
// or ends it when none waits.
func (e *engine) placed(j *jobState) error {
	if e.resv != nil && e.resv.j == j {
		e.resv.j = nil
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
	replaceable := false
	var fragmented []*gpuSlot
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
				fragmented = append(fragmented, gs)
			}
		}
	}
	if replaceable {
		e.res.Replaceable++
	} else if len(fragmented) > 0 {
		e.res.Fragmented++
		e.recordFragmented(j, fragmented)
	}
}

// expected is how long a run of j's profile is expected to hold its
// instance: the mean of the runs of that profile finished so far, else of
// every run finished so far (what an agent can measure: how long instances
// of each profile were held). It is zero before any run has finished.
func (e *engine) expected(j *jobState) float64 {
	if v, ok := e.profileRuns.mean(j.profile.Name); ok {
		return v
	}
	return e.profileRuns.overall()
}

// nearEmpty reports whether some GPU of node n that offers profile has at
// most half its compute slices held (the ReserveNearEmpty trial).
func (e *engine) nearEmpty(n int, profile string) bool {
	for _, gs := range e.nodes[n].gpus {
		if _, ok := gs.model.Profile(profile); ok && 2*gs.heldSlices <= gs.model.Slices {
			return true
		}
	}
	return false
}

// reserveDrainingFirst is the ReserveOracle trial: on node n it holds the
// placement of profile whose runs in the way end first, by when each run
// would end at its present rate (a run not started yet counts as never
// ending), ties to the lower GPU, then the lower slot. Only the replay
// knows these ends.
func (e *engine) reserveDrainingFirst(n int, profile string) (partitioner.Reservation, error) {
	best := math.Inf(1)
	var out partitioner.Reservation
	found := false
	for gi, gs := range e.nodes[n].gpus {
		for _, mask := range gs.model.geo.SlotMasks(profile) {
			end := e.now
			for r := range e.active {
				if r.g.node != n || r.g.gpu != gi || geometry.SlotMask(r.g.placement)&mask == 0 {
					continue
				}
				if r.rate <= 0 {
					end = math.Inf(1)
					break
				}
				end = max(end, r.last+(1-r.progress)/r.rate)
			}
			if !found || end < best {
				pl := gpu.Placement{Start: bits.TrailingZeros16(mask), Size: bits.OnesCount16(mask)}
				out, best, found = partitioner.Reservation{GPU: gi, Profile: profile, Placement: &pl}, end, true
			}
		}
	}
	if !found {
		return partitioner.Reservation{}, fmt.Errorf("node %d: no GPU offers %s to reserve", n, profile)
	}
	if err := e.nodes[n].part.Reserve(&out); err != nil {
		return partitioner.Reservation{}, fmt.Errorf("node %d: %w", n, err)
	}
	return out, nil
}
