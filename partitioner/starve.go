package partitioner

import "time"

// Starvation: when a request that keeps waiting gets a reservation. The
// agent applies this rule to its local callers when --reserve-after is set
// (agent/pending.go), and the replay to its waiting jobs under the policies
// that model it (replay/reserve.go), through the functions below, so a
// replay reserves when the agent would.

// MinReserveGPUs is the fewest GPUs a node must have to reserve room for a
// starving request. A reservation keeps a GPU's releases for one request
// while the rest of the node serves the queue; on a node of one or two GPUs
// that rest is half the node or nothing, and the queue waits for the drain
// (docs/replay-findings.md, replay-results.md: on one A100 the replay's mean JCT fell to 0.19-0.40x of
// the baselines' with reservations).
const MinReserveGPUs = 3

// Waiter is a request that waits: Key names it (unique among the waiters),
// Since is when it began waiting.
type Waiter struct {
	Key, Profile string
	Since        time.Time
}

// Starving returns the waiter to reserve for: of those waiting longer than
// after, the one waiting longest (ties: the lower key). It reports false
// when none has waited that long.
func Starving(now time.Time, waiters []Waiter, after time.Duration) (Waiter, bool) {
	var best Waiter
	found := false
	for _, w := range waiters {
		if now.Sub(w.Since) <= after {
			continue
		}
		if !found || w.Since.Before(best.Since) || (w.Since.Equal(best.Since) && w.Key < best.Key) {
			best, found = w, true
		}
	}
	return best, found
}

// ReservesForStarving reports whether this node may reserve room for a
// starving request: only with MinReserveGPUs GPUs or more.
func (p *Partitioner) ReservesForStarving() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.slots) >= MinReserveGPUs
}
