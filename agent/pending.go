package agent

import (
	"maps"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/partitioner"
)

// Pending demand. The partitioner's migpro policy keeps room for requests
// that wait (Partitioner.ObservePending), so the agent tells it what waits:
// pods the cluster demand source could serve here but has no room for yet
// (ClusterProvisioner.ObservePending), and local API callers whose alloc was
// answered "must wait" and who have not been served or gone quiet since.
// With --reserve-after (Config.ReserveAfter) and on a node of
// partitioner.MinReserveGPUs GPUs or more, a local caller that keeps waiting
// longer than that (partitioner.Starving) gets a reservation
// (Partitioner.ReserveFor): the placement on one GPU closest to holding its
// profile is held, while the rest of that GPU and every other GPU keep
// serving, until it is served or gives up. It is off by default: in the
// replay, which runs the same rule (replay/reserve.go, policy
// migpro+reserve-after), it cost mean JCT on every node size measured
// (docs/replay-findings.md, "The agent's reservations, replayed").

const (
	// localWaitTTL is how long a local caller that was told to wait counts
	// as waiting without asking again.
	localWaitTTL = time.Minute
)

type localWait struct {
	profile     string
	since, last time.Time
}

// pendingDemand is what waits for this node now.
type pendingDemand struct {
	mu      sync.Mutex
	cluster map[string]int
	local   map[string]*localWait // by owner and profile
	// starveAfter is how long a local caller may keep waiting before a GPU
	// is reserved for it; 0 never reserves.
	starveAfter time.Duration
	now         func() time.Time
	// reservedFor is the local wait the standing reservation serves.
	reservedFor string
}

func newPendingDemand(starveAfter time.Duration) *pendingDemand {
	return &pendingDemand{local: map[string]*localWait{}, starveAfter: starveAfter, now: time.Now}
}

func waitKey(owner, profile string) string { return owner + "\x00" + profile }

// ObservePending records what the cluster demand source says waits (the
// demand.PendingObserver side of the provisioner) and passes the node's
// whole pending demand on to the partitioner.
func (c *ClusterProvisioner) ObservePending(counts map[string]int) {
	c.a.pending.mu.Lock()
	c.a.pending.cluster = maps.Clone(counts)
	c.a.pending.mu.Unlock()
	c.a.pushPending()
}

// localWaiting records that a local caller was told to wait for profile.
func (a *Agent) localWaiting(owner, profile string) {
	pd := a.pending
	pd.mu.Lock()
	now := pd.now()
	k := waitKey(owner, profile)
	if w, ok := pd.local[k]; ok {
		w.last = now
	} else {
		pd.local[k] = &localWait{profile: profile, since: now, last: now}
	}
	pd.mu.Unlock()
	a.pushPending()
}

// localServed records that a local caller got its instance.
func (a *Agent) localServed(owner, profile string) {
	pd := a.pending
	pd.mu.Lock()
	_, was := pd.local[waitKey(owner, profile)]
	delete(pd.local, waitKey(owner, profile))
	pd.mu.Unlock()
	if was {
		a.pushPending()
	}
}

// PendingDemand reports, by profile, the requests the agent knows wait.
func (a *Agent) PendingDemand() map[string]int {
	counts, _ := a.pending.snapshot(false)
	return counts
}

// snapshot drops local waits gone quiet and sums what waits. With reserve
// (the node reserves for starving callers) it also says which local wait, if
// any, has starved (partitioner.Starving: the oldest one waiting longer than
// starveAfter), and whether the standing reservation's wait is gone;
// without, it leaves the reservation bookkeeping alone.
func (pd *pendingDemand) snapshot(reserve bool) (map[string]int, starve) {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	now := pd.now()
	counts := maps.Clone(pd.cluster)
	if counts == nil {
		counts = map[string]int{}
	}
	var st starve
	var waiters []partitioner.Waiter
	for k, w := range pd.local {
		if now.Sub(w.last) > localWaitTTL {
			delete(pd.local, k)
			continue
		}
		counts[w.profile]++
		waiters = append(waiters, partitioner.Waiter{Key: k, Profile: w.profile, Since: w.since})
	}
	for p, n := range counts {
		if n == 0 {
			delete(counts, p)
		}
	}
	if !reserve {
		return counts, st
	}
	if pd.reservedFor != "" {
		if _, ok := pd.local[pd.reservedFor]; ok {
			return counts, st // one reservation at a time
		}
		st.clear = true
		pd.reservedFor = ""
	}
	if w, ok := partitioner.Starving(now, waiters, pd.starveAfter); ok {
		st.key, st.profile = w.Key, w.Profile
		pd.reservedFor = w.Key
	}
	return counts, st
}

// starve is what snapshot found about reservations: profile is the starving
// wait to reserve for (empty: none), clear says the standing one is done.
type starve struct {
	key, profile string
	clear        bool
}

// pushPending hands the pending demand to the partitioner and sets or
// clears the reservation for a starving local caller.
func (a *Agent) pushPending() {
	a.pending.mu.Lock()
	reserve := a.pending.starveAfter > 0
	a.pending.mu.Unlock()
	counts, st := a.pending.snapshot(reserve && a.part.ReservesForStarving())
	if len(counts) == 0 {
		counts = nil
	}
	a.part.ObservePending(counts)
	if st.clear {
		if err := a.part.Reserve(nil); err != nil {
			a.log.WithError(err).Warn("clear reservation")
		}
		a.log.Info("reservation cleared: its request was served or gave up")
	}
	if st.profile != "" {
		r, err := a.part.ReserveFor(st.profile)
		if err != nil {
			a.log.WithError(err).WithField("profile", st.profile).Warn("reserve a GPU for a starving request")
			return
		}
		a.log.WithFields(logrus.Fields{"profile": r.Profile, "gpu": r.GPU}).Info("GPU reserved for a request waiting too long")
	}
}

// reservationStatus is the standing reservation for status, if any.
func (a *Agent) reservationStatus() *partitioner.Reservation {
	if r, ok := a.part.Reserved(); ok {
		return &r
	}
	return nil
}
