package predictor

// climbs reads growth in rounds: a run whose peak holds for minutes
// between climbs, each round taking more than the last held (a training
// schedule's stages at growing sizes, a validation that keeps every
// earlier validation's outputs, a kernel matrix rebuilt beside the old
// one). The windows see each round as one step after a plateau, and a
// single step is not a trend; the runs of rises see rises tens of seconds
// apart at most. What does show is the rounds themselves: a climb is the
// peak rising a quantum or more after it held for climbHold; the rises
// that follow within climbHold belong to the same climb.
//
// climbs marks when the last climbs after the container's first (its
// load) came at a steady period (no interval over climbSpread times
// another), none smaller than half their mean, the next is due (no climb
// for climbStale periods says they stopped), and the headroom is under
// the mean climb: the next round does not fit. With a horizon it asks
// climbsCount climbs, two intervals, and the next round due before the
// horizon; without one, a climb more, as the runs of rises ask a long
// run whose next step or burst does not fit (stairs.check): migpro never
// assumes an end, but a run that has kept coming back at its period is
// read as coming back once more. A warm-up that climbs in ever smaller
// steps fails the sizes, one that stops fails the staleness, and one that
// stops with room for a round more is never asked. O(1) per sample.
//
// The count of climbs also tells a steep window with a horizon whether it
// is a stage of its run (stage).
type climbs struct {
	level, lastRise float64 // the peak at the last rise, and when
	// started says a climb is under way (cur) since the first sample;
	// load says it is the container's first, which started with it and
	// is never a round; risen that the peak has risen since the start.
	started, load, risen bool
	cur                  climb
	ring                 [climbsCount + 1]climb // the closed climbs, oldest first
	n                    int
	// count is how many climbs the container has made (its load not
	// counted): stage reads it.
	count int
}

// climb is one climb: when it started, the peak before it and after it.
type climb struct{ t, from, to float64 }

const (
	// climbHold is how long the peak must hold, in seconds, for the next
	// rise to start a climb: longer than a run of rises' gaps
	// (stairsBreakGap of a few seconds) and a training step.
	climbHold = 30
	// stageClimbs and stageWatch: see stage.
	stageClimbs = 3
	stageWatch  = 3
	// climbsCount is how many climbs, the one under way included, must
	// agree with a horizon: two intervals, so that the period is measured,
	// not assumed. Without a horizon it is one more.
	climbsCount = 3
	// climbSpread bounds how much longer the longest interval between
	// the climbs may be than the shortest.
	climbSpread = 2
	// climbStale: rounds that have not come for this many periods stopped.
	climbStale = 1.5
)

// observe adds the peak at t; q is the quantum (stairsQuantum of capacity).
func (c *climbs) observe(t, peak, q float64) {
	if !c.started {
		c.started, c.level, c.lastRise = true, peak, t
		c.load, c.cur = true, climb{t, peak, peak}
		return
	}
	if peak < c.level+q {
		return
	}
	if c.risen && t-c.lastRise >= climbHold {
		if !c.load {
			c.push(c.cur)
		}
		c.load, c.cur = false, climb{t, c.level, peak}
		c.count++
	} else {
		c.cur.to = peak // the container's first rise is its load's
	}
	c.level, c.lastRise, c.risen = peak, t, true
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

// check is the climbs' verdict at now.
func (c *climbs) check(p *Predictor, now float64) (verdict, bool) {
	h := p.cfg.Horizon
	k := climbsCount
	if h <= now {
		k++
	}
	if !c.started || c.load || c.n < k-1 {
		return verdict{}, false
	}
	// The climbs judged: the newest k-1 closed ones, then the one under way.
	at := func(i int) climb {
		if i == k-1 {
			return c.cur
		}
		return c.ring[c.n-(k-1)+i]
	}
	period := (c.cur.t - at(0).t) / float64(k-1)
	if period <= 0 || now-c.cur.t > climbStale*period || (h > now && c.cur.t+period >= h) {
		return verdict{}, false
	}
	shortest, longest, sum := period*float64(k), 0.0, at(0).to-at(0).from
	for i := 1; i < k; i++ {
		iv := at(i).t - at(i-1).t
		shortest, longest, sum = min(shortest, iv), max(longest, iv), sum+at(i).to-at(i).from
	}
	if longest > climbSpread*shortest {
		return verdict{}, false
	}
	mean := sum / float64(k)
	for i := range k {
		if at(i).to-at(i).from < mean/2 {
			return verdict{}, false
		}
	}
	if float64(p.cfg.Capacity)-p.peak >= mean {
		return verdict{}, false
	}
	if h <= now {
		tto := max(0, c.cur.t+period-now)
		return verdict{target: now + period, riskAt: now + period, tto: tto, reason: ReasonTimeToOOM, rate: mean / period}, true
	}
	return verdict{target: h, riskAt: c.cur.t + period, reason: ReasonHorizon, rate: mean / period}, true
}

// stage reports whether a steep window with a horizon (steepWindow), on a
// container watched for elapsed, is a stage of its run: the container has
// been watched for stageWatch eviction times, and its peak has climbed
// after holding (count) fewer than stageClimbs times. A checkpoint
// gathered layer by layer, or text generated during an evaluation, climbs
// for seconds or tens of seconds after minutes at one level and stops
// short of the instance; such a climb is asked whether it runs out within
// NearTime, as a run of rises read without a horizon is, not within a
// window's lead (up to the eviction time). A peak that climbs again and
// again after holding (rollouts whose answers lengthen, each a new record)
// is a trend of climbs, and a container younger than stageWatch eviction
// times has no stage behind it yet: both keep the window's lead. O(1).
func (c *climbs) stage(cfg *Config, elapsed float64) bool {
	return cfg.NearTime > 0 && cfg.EvictionTime > 0 && elapsed >= stageWatch*cfg.EvictionTime && c.count < stageClimbs
}
