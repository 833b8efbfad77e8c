package predictor

// climbs reads growth in rounds, with a horizon: a run whose peak holds
// for minutes between climbs, each round taking more than the last held
// (a training schedule's stages at growing sizes, a validation that keeps
// every earlier validation's outputs, a kernel matrix rebuilt beside the
// old one). The windows see each round as one step after a plateau, and a
// single step is not a trend; the runs of rises see rises tens of seconds
// apart at most. What does show is the rounds themselves: a climb is the
// peak rising a quantum or more after it held for climbHold; the rises
// that follow within climbHold belong to the same climb.
//
// With a horizon only (without one, migpro never assumes the run goes on
// to its next round), climbs marks when the last climbsCount climbs after
// the container's first (its load) came at a steady period (no interval
// over climbSpread times another), none of them smaller than half the
// mean of the others, the next is due before the horizon and has not
// stopped coming (no climb for climbStale periods), and the headroom is
// under the mean climb: the next round does not fit. A warm-up that climbs
// in ever smaller steps fails the sizes, one that stops fails the
// staleness, and one that stops with room for a round more is never asked.
// O(1) per sample.
type climbs struct {
	level, lastRise float64 // the peak at the last rise, and when
	started         bool
	// open says a climb is under way (cur); load says it is the
	// container's first, which started with it and is never a round.
	open, load bool
	cur        climb
	ring       [climbsCount]climb // the closed climbs, oldest first
	n          int
}

// climb is one climb: when it started, the peak before it and after it.
type climb struct{ t, from, to float64 }

const (
	// climbHold is how long the peak must hold, in seconds, for the next
	// rise to start a climb: longer than a run of rises' gaps
	// (stairsBreakGap of a few seconds) and a training step.
	climbHold = 30
	// climbsCount is how many climbs, the one under way included, must
	// agree: two intervals, so that the period is measured, not assumed.
	climbsCount = 3
	// climbSpread bounds how much longer the longest interval between
	// the climbs may be than the shortest.
	climbSpread = 1.5
	// climbStale: rounds that have not come for this many periods stopped.
	climbStale = 1.5
)

// observe adds the peak at t; q is the quantum (stairsQuantum of capacity).
func (c *climbs) observe(t, peak, q float64) {
	if !c.started {
		c.started, c.level, c.lastRise = true, peak, t
		c.open, c.load, c.cur = true, true, climb{t, peak, peak}
		return
	}
	if peak < c.level+q {
		return
	}
	if t-c.lastRise >= climbHold {
		if c.open && !c.load {
			c.push(c.cur)
		}
		c.open, c.load, c.cur = true, false, climb{t, c.level, peak}
	} else {
		c.cur.to = peak
	}
	c.level, c.lastRise = peak, t
}

// push keeps the newest climbsCount-1 closed climbs.
func (c *climbs) push(x climb) {
	if c.n == len(c.ring) {
		copy(c.ring[:], c.ring[1:])
		c.n--
	}
	c.ring[c.n] = x
	c.n++
}

// check is the climbs' verdict at now: only with a horizon.
func (c *climbs) check(p *Predictor, now float64) (verdict, bool) {
	h := p.cfg.Horizon
	if h <= now || !c.open || c.load || c.n < climbsCount-1 {
		return verdict{}, false
	}
	held := c.ring[c.n-(climbsCount-1) : c.n]
	first := held[0]
	period := (c.cur.t - first.t) / float64(climbsCount-1)
	if period <= 0 || now-c.cur.t > climbStale*period || c.cur.t+period >= h {
		return verdict{}, false
	}
	shortest, longest := c.cur.t-held[len(held)-1].t, 0.0
	prev := first.t
	for _, x := range append(held[1:], c.cur) {
		iv := x.t - prev
		shortest, longest, prev = min(shortest, iv), max(longest, iv), x.t
	}
	if longest > climbSpread*shortest {
		return verdict{}, false
	}
	sum := c.cur.to - c.cur.from
	for _, x := range held {
		sum += x.to - x.from
	}
	mean := sum / climbsCount
	for _, x := range append(held, c.cur) {
		if x.to-x.from < mean/2 {
			return verdict{}, false
		}
	}
	if float64(p.cfg.Capacity)-p.peak >= mean {
		return verdict{}, false
	}
	return verdict{target: h, riskAt: c.cur.t + period, reason: ReasonHorizon, rate: mean / period}, true
}
