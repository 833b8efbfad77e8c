package predictor

import "math"

// stairs reads the peak series as a run of rises (steps of a staircase, or
// the quanta of a ramp) and asks issue 29's question directly: at the run's
// own steady rate, does the container run out soon, sooner than an eviction
// needs? It complements the binned windows, whose gates wait for 24 s of
// history and for rises in every quarter of a window, which sees a KV cache
// growing in steps, or fast growth after a load, only at its OOM.
//
//   - A rise is the peak climbing stairsQuantum of capacity above the level
//     of the last rise: a step, or a slice of a ramp. Its gap is the time
//     since the last rise.
//   - A run is a sequence of rises of similar size. A rise over
//     stairsBreakSize times its mean step (one step: a cache reserved at
//     once) starts a new run with that rise alone. So does, in the run that
//     starts with the container, a gap over stairsBreakGap times the run's
//     mean gap and at least stairsPause (a pause: the end of a load). Later
//     runs keep their long gaps, which lower their rate.
//   - The run that starts with the container is its load or warm-up, and is
//     never read as growth: only a run that starts after a pause (a long
//     gap of at least stairsPause) can mark. A single step is never a
//     trend: a run needs stairsMinGaps gaps over stairsMinSpan.
//   - When the shim counts the driver's allocation calls, a run whose rises
//     took BulkBytes or more per call is a load (weights copied tensor by
//     tensor), never growth. Without the shim it cannot be told apart.
//   - The rate is the run's last stairsRing rises over the time from the
//     oldest to now, so it falls while no step comes: a run that has stopped
//     (no rise for stairsBreakGap mean gaps) never marks.
//   - A run whose usage fell back below the level it started from gave back
//     what it rose (a sawtooth's tops, bursts freed): never growth. Without
//     a horizon, neither is a run that, once it held stairsEpisodeRises
//     rises, gave back three quarters of its rise (gaveBack), nor one whose
//     latest usage is under half of its rise; and the time to OOM is
//     projected from the latest usage, not from the peak.
//   - A run that starts with a jump (at 1 Hz a fast load is one poll's
//     jump) is followed, after a pause of stairsPause, by an eligible run,
//     as a load of several rises is.
//   - Without a horizon, a run is read as episodes (see episode): a gap
//     that holds most of the time the held rises span ends the rises before
//     it, which stopped; only the latest episode may mark, on its own gaps
//     and over its own span of at least stairsNearSpan.
//   - With a horizon, a young run counts from the end of the load before
//     its pause (anchor), the pause as one more gap unless it holds most
//     of what the run spans; and the run must still be a trend, measured
//     after the warm-up (stairs_trend.go: its rises span
//     stairsHorizonSpan, rise in both halves of its time, and its latest
//     step does not follow a silence). A young run whose OOM is projected
//     within the eviction time, or sooner than stairsHorizonReach times
//     the time the container has been watched, is read as without a
//     horizon (steepForHorizon). A
//     reservation (one step over stairsBreakSize times the run's others)
//     ended what came before it (afterReserve), and a step after a wait
//     of stairsStepSilence times the pause between the earlier steps is
//     one step after a stop (stepAfterPauses).
//   - Without a horizon, a run whose latest step holds most of its rise is
//     a single step, not a trend (latestStep).
//   - Without a horizon, an episode that has risen for stairsLongRun
//     eviction times in stairsRing rises or more marks when its OOM is
//     projected within the eviction time, not only within NearTime, while
//     its headroom is within stairsLongSteps of its largest held steps.
//   - Without a horizon, a run that has risen for stairsLongRun eviction
//     times in stairsRing rises or more, and whose headroom is under its
//     mean held step, or under its mean burst once it has risen in
//     stairsNextBursts bursts (nextBurst), marks: its next such step does
//     not fit.
//   - The rate's uncertainty comes from how regular the gaps are (their
//     coefficient of variation cv over m gaps): the fast bound is
//     rate·(1+min(stairsZ·cv/√m, stairsMaxWiden)). Without a horizon,
//     migpro marks when the time to OOM at the fast bound is under NearTime
//     (and the eviction time). A warm-up staircase that stops under
//     capacity is far from its OOM when it stops; steady growth reaches
//     NearTime before its OOM.
//   - With a horizon, it marks when the slow bound rate·(1−stairsZ·cv/√m),
//     but never under half the rate, carries the peak past capacity before
//     the horizon.
//   - Where the container's first run ends (loadEnd) also tells the windows
//     which of them hold the load (holdsLoad): the load gate of migpro.check.
//
// It runs only on series in seconds (EvictionTime set, as ForSeconds does).
// Its cost is O(1) per sample, O(stairsRing) on a sample that could mark.
type stairs struct {
	level    float64 // the peak at the last rise
	started  bool
	eligible bool // the run started after a pause or a jump, not with the container
	ring     [stairsRing]rise
	head, n  int // next slot; rises held (≤ stairsRing)
	lastT    float64
	start    float64 // the time of the run's first rise
	// anchor is the last rise before the pause that made the run eligible
	// (the end of the load): with a horizon, the pause counts as one gap.
	anchor   rise
	anchored bool
	low      float64 // the lowest usage since the run's first rise
	base     float64 // the peak before the run's first rise
	tol      float64 // half a quantum, in bytes
	gapSum   float64 // sum of the gaps between the held rises
	gapSqSum float64
	stepSum  float64 // sum of the steps of the held rises but the oldest
	// loadEnd is the time of the last rise of the container's first run
	// (its load), once a pause has ended it (loaded).
	loadEnd float64
	loaded  bool
	// loadPeak is the peak at loadEnd; firstPeak the peak at the
	// container's first sample (see lifetimeReaches).
	loadPeak, firstPeak float64
	jumped              bool // the run started with a jump (a rise over stairsBreakSize steps)
	// gaveBack: since it held stairsEpisodeRises rises, the run's usage
	// fell by more than three quarters of its rise (a training step's
	// activations freed), which growth never does; a KV cache that frees a
	// block now and then gives back a step, not its rise.
	gaveBack bool
	// epStart is the time of the first rise of the run's latest episode
	// (see episode), epRises how many rises it holds.
	epStart float64
	epRises int
	// cur is the latest usage: the time to OOM is projected from it, not
	// from the peak, so a rise given back (a training step's activations
	// freed) is not running out.
	cur float64
	// The run's bursts (see burst): the level the current one started
	// from, and the rise and count of those that ended.
	burstFrom, burstSum float64
	bursts              int
}

// rise is one rise: its time, the peak after it, the gap and step before
// it, and the driver allocation calls so far (0: unknown).
type rise struct{ t, y, gap, step, allocs float64 }

const (
	stairsRing      = 8
	stairsQuantum   = 0.02
	stairsBreakGap  = 2.5
	stairsBreakSize = 4
	stairsMinGaps   = 4
	// stairsHorizonGaps is the run's length with a horizon, where the slow
	// bound must still carry the peak past capacity before the known end.
	stairsHorizonGaps = 3
	// stairsHalf: with a horizon, a run is trusted to keep at least half its
	// rate however irregular its gaps (bursts of requests climb in clusters):
	// it marks when half the rate still reaches capacity by the horizon.
	stairsHalf = 0.5
	stairsZ    = 1.5
	// stairsMaxWiden caps how far the gaps' spread widens the fast bound
	// without a horizon: rate·(1+min(stairsZ·cv/√m, stairsMaxWiden)). Gaps
	// more irregular than that say the run is bursts or episodes, which is
	// no reason to expect it faster.
	stairsMaxWiden = 0.5
	// stairsEpisodeShare: a run one of whose gaps holds more than this
	// share of its span is episodes, not a trend (see episode), judged
	// once the run holds stairsEpisodeRises rises (a gap among two or
	// three is no pause, just the spread of a young run's gaps).
	stairsEpisodeShare = 0.6
	stairsEpisodeRises = 4
	// stairsPause is the shortest pause, in seconds, after which a run can
	// be growth: a load's tensor-sized chunks leave irregular gaps of a
	// second or so, which must not split it into runs that could mark.
	stairsPause = 2
	// stairsMinSpan is the shortest run, in seconds, that can mark: a burst
	// of rises within a second or two is one step, not a rate.
	stairsMinSpan = 4
	// stairsNearSpan is the shortest episode, in seconds, that can mark
	// without a horizon: a run that marks then is projected up to NearTime
	// (10 s) ahead, and never much beyond 1.7 times what it was watched.
	// (4 s marked training steps and model loads of 4-6 s after a pause,
	// sealed set v1; docs/predictor-episodes.md.)
	stairsNearSpan = 6
	// stairsLongRun: without a horizon, an episode that has gone on for
	// this many eviction times, in stairsRing rises or more, marks when its
	// OOM is projected within the eviction time, not only within NearTime:
	// slow growth in steps tens of seconds apart (a cache of compiled
	// graphs, a long context's blocks) nears its OOM too slowly to come
	// within NearTime before its last step, and a warm-up or a load does
	// not rise for minutes. 1 eviction time marked a warm-up staircase of
	// the first held-out set in 26/100 runs (docs/predictor-round3.md).
	stairsLongRun = 2
	// stairsLongSteps: a long run (stairsLongRun) is asked about the
	// eviction time only while its headroom is under this many of its
	// largest held steps; further from capacity it is asked about NearTime,
	// as a younger run is. A decelerating staircase (a cache that fills,
	// pools added as streams join) rises for minutes too, but stops many
	// steps short of the instance; at 4 a batched ingest was marked under
	// 5 s ahead, and a cache of compiled graphs missed, more often
	// (docs/predictor-round4.md).
	stairsLongSteps = 6
)

// observe updates the runs with the peak at t; capacity sets the quantum.
func (s *stairs) observe(t, used, peak, allocs, capacity float64) {
	s.low, s.cur = min(s.low, used), used
	if s.n >= stairsEpisodeRises && peak-used > 0.75*(peak-s.base) {
		s.gaveBack = true
	}
	if !s.started {
		s.started, s.level, s.tol = true, peak, stairsQuantum*capacity/2
		s.firstPeak = peak
		return
	}
	if peak < s.level+stairsQuantum*capacity {
		return
	}
	gap, step := t-s.lastT, peak-s.level
	s.burst(gap)
	s.level = peak
	if s.n == 0 {
		// The first rise: the hold before it is the process starting.
		s.reset(rise{t, peak, 0, step, allocs}, false)
		return
	}
	if s.n == 1 && s.jumped && !s.eligible && gap >= stairsPause {
		// A load read as one jump (a poll once a second), then a pause.
		prev := s.ring[(s.head+stairsRing-1)%stairsRing]
		if !s.loaded {
			s.loaded, s.loadEnd, s.loadPeak = true, prev.t, prev.y
		}
		s.reset(rise{t, peak, gap, step, allocs}, true)
		s.anchor, s.anchored = prev, true
		return
	}
	if s.n >= 2 {
		m := float64(s.n - 1)
		long := !s.eligible && gap > stairsBreakGap*s.gapSum/m && gap >= stairsPause
		if long || step > stairsBreakSize*max(s.stepSum/m, stairsQuantum*capacity) {
			prev := s.ring[(s.head+stairsRing-1)%stairsRing]
			if long && !s.loaded {
				s.loaded, s.loadEnd, s.loadPeak = true, prev.t, prev.y
			}
			s.reset(rise{t, peak, gap, step, allocs}, long || s.eligible)
			s.anchor, s.anchored, s.jumped = prev, long, !long
			return
		}
	}
	if s.eligible && s.n >= stairsEpisodeRises {
		// A gap that holds most of the time spanned by the held rises and it
		// ends an episode: the rises before it stopped (see episode).
		oldest := s.ring[s.head%stairsRing]
		if s.n < stairsRing {
			oldest = s.ring[0]
		}
		if gap > stairsEpisodeShare*(t-oldest.t) {
			s.epStart, s.epRises = t, 0
		}
	}
	s.epRises++
	if s.n == stairsRing {
		// Drop the oldest: its successor's gap and step leave the sums.
		next := s.ring[(s.head+1)%stairsRing]
		s.gapSum -= next.gap
		s.gapSqSum -= next.gap * next.gap
		s.stepSum -= next.step
	} else {
		s.n++
	}
	if s.n > 1 {
		s.gapSum += gap
		s.gapSqSum += gap * gap
		s.stepSum += step
	}
	s.ring[s.head] = rise{t, peak, gap, step, allocs}
	s.head = (s.head + 1) % stairsRing
	s.lastT = t
}

// holdsLoad reports whether a window that starts at t and ends at now reads
// the container's load as a trend. Once a pause has ended the load, a window
// that starts before its end (loadEnd) does. While the load has not paused,
// every window starts in it, and only a run that is still rising, steadily,
// may be growth: a run of at least stairsMinGaps gaps over stairsMinSpan
// whose last rise is no older than stairsBreakGap mean gaps. A load that
// stopped, or a single step after it (vLLM's cache reserved at once), is not.
func (s *stairs) holdsLoad(t, now float64) bool {
	if s.loaded {
		return t < s.loadEnd
	}
	gaps := s.n - 1
	if gaps < stairsMinGaps || now-s.start < stairsMinSpan {
		return true
	}
	return now-s.lastT > stairsBreakGap*s.gapSum/float64(gaps)
}

// reset starts a run with one rise.
func (s *stairs) reset(r rise, eligible bool) {
	s.ring[0] = r
	s.head, s.n = 1, 1
	s.gapSum, s.gapSqSum, s.stepSum = 0, 0, 0
	s.lastT, s.start, s.eligible, s.anchored, s.jumped = r.t, r.t, eligible, false, false
	s.gaveBack = false
	s.epStart, s.epRises = r.t, 1
	s.low, s.base = r.y, r.y-r.step
	s.burstFrom, s.burstSum, s.bursts = s.base, 0, 0
}

// rate is the run's rate up to now, with its relative uncertainty; false
// when the run cannot mark (not eligible, too short, or stopped). With a
// horizon (fromPause), a run whose oldest rise is still its first counts
// from the end of the load before its pause, the pause as one more gap.
func (s *stairs) rate(now, bulk float64, minGaps int, fromPause bool) (r, rel float64, ok bool) {
	oldest := s.ring[s.head%stairsRing]
	if s.n < stairsRing {
		oldest = s.ring[0]
	}
	gaps, gapSum, gapSqSum := s.n-1, s.gapSum, s.gapSqSum
	newest := s.ring[(s.head+stairsRing-1)%stairsRing]
	if fromPause && s.anchored && s.n < stairsRing {
		// The pause counts as one more gap only while it does not hold
		// most of what the run spans from the anchor: a pause that does
		// ends an episode (a warm-up's burst after its load).
		if g := s.ring[0].gap; g <= stairsEpisodeShare*(newest.t-s.anchor.t) {
			gaps, gapSum, gapSqSum = gaps+1, gapSum+g, gapSqSum+g*g
			oldest = s.anchor
		}
	}
	if fromPause {
		// With a horizon, a reservation (one step far larger than the
		// run's others) ended what came before it: only the rises after
		// it are judged (afterReserve).
		if e, ok := s.afterReserve(); ok {
			oldest, gaps, gapSum, gapSqSum = e.first, e.gaps, e.gapSum, e.gapSqSum
		}
	}
	start, span := s.start, float64(stairsMinSpan)
	if !fromPause {
		start, span = s.epStart, stairsNearSpan
		if e, ok := s.episode(); ok {
			oldest, gaps, gapSum, gapSqSum = e.first, e.gaps, e.gapSum, e.gapSqSum
			start = max(start, e.first.t)
		}
	}
	if !s.eligible || gaps < minGaps || gaps < 1 || now-start < span {
		return 0, 0, false
	}
	if fromPause && newest.t-oldest.t < stairsHorizonSpan {
		// With a horizon, the rises themselves must span stairsHorizonSpan:
		// a warm-up's burst, however steep, is over before that.
		return 0, 0, false
	}
	if s.low < s.base-s.tol {
		// The run gave back what it rose: the peaks of a sawtooth or of
		// bursts, not growth, which keeps what it takes.
		return 0, 0, false
	}
	m := float64(gaps)
	mean := gapSum / m
	if now-s.lastT > stairsBreakGap*mean {
		return 0, 0, false
	}
	dt := now - oldest.t
	if dt <= 0 || mean <= 0 {
		return 0, 0, false
	}
	if calls := newest.allocs - oldest.allocs; newest.allocs > 0 && calls > 0 && (newest.y-oldest.y)/calls >= bulk {
		return 0, 0, false // the shim saw tensor-sized calls: a load
	}
	r = (newest.y - oldest.y) / dt
	if fromPause && (!s.risesEachHalf(oldest, newest, now) || s.stepAfterStop(newest) || s.stepAfterPauses()) {
		return 0, 0, false // a trend that stopped, or a single step after it
	}
	if !fromPause && s.latestStep(newest) > stairsStepShare*(newest.y-oldest.y) {
		// A single step is not a trend: the run's latest allocation holds
		// most of what it rose (a pool that doubles its last region).
		return 0, 0, false
	}
	v := max(0, gapSqSum/m-mean*mean)
	return r, math.Sqrt(v) / mean / math.Sqrt(m), true
}

// episodeOf is the rises of a run's latest episode.
type episodeOf struct {
	first            rise
	gaps             int
	gapSum, gapSqSum float64
}

// episode returns the held rises of the run's latest episode, when it
// began after the oldest held rise: the rises after a gap that holds more
// than stairsEpisodeShare of the time the held rises span. Such a run is
// episodes (a load, another load after a pause; a profiling pass, then a
// cache reserved at once), each of which stopped, not one trend. Without
// a horizon only the latest episode may mark, on its own evidence: its
// gaps, its span since epStart (where an episode began when its gap
// ended, which the ring may have dropped since) and its rate.
func (s *stairs) episode() (episodeOf, bool) {
	if s.n < 3 {
		return episodeOf{}, false
	}
	at := func(j int) rise { return s.ring[(s.head+stairsRing-1-j)%stairsRing] }
	// j: the episode's first rise, counted back from the newest (0): the
	// rise after the longest held gap, when that gap holds most of the span.
	longest, j := 0.0, 0
	for i := 0; i < s.n-1; i++ {
		if g := at(i).gap; g > longest {
			longest, j = g, i
		}
	}
	if longest <= stairsEpisodeShare*(at(0).t-at(s.n-1).t) {
		return episodeOf{}, false
	}
	e := episodeOf{first: at(j), gaps: j}
	for i := 0; i < j; i++ {
		g := at(i).gap
		e.gapSum += g
		e.gapSqSum += g * g
	}
	return e, true
}

// check is the stairs' verdict at now.
func (s *stairs) check(p *Predictor, now float64) (verdict, bool) {
	h := p.cfg.Horizon
	capacity := float64(p.cfg.Capacity)
	if h > now {
		r, rel, ok := s.rate(now, p.cfg.BulkBytes, stairsHorizonGaps, true)
		if !ok || r <= 0 {
			return verdict{}, false
		}
		if !steepForHorizon(&p.cfg, (capacity-s.cur)/r, now-p.first, stairsHorizonReach) || now-s.start >= p.cfg.EvictionTime {
			slow := r * max(1-stairsZ*rel, stairsHalf)
			if slow <= 0 || p.peak+slow*(h-now) <= capacity || !s.lifetimeReaches(p, now, h, capacity) {
				return verdict{}, false
			}
			return verdict{target: h, riskAt: h, reason: ReasonHorizon, rate: r, rateSD: r * rel}, true
		}
		// A young run projected to run out within the eviction time, or
		// sooner than stairsHorizonReach times what has been watched: the
		// horizon adds nothing, and the run is read as it is without one
		// (a warm-up staircase is as steep as growth until it stops).
	}
	r, rel, ok := s.rate(now, p.cfg.BulkBytes, stairsMinGaps, false)
	if !ok || r <= 0 {
		return verdict{}, false
	}
	if s.gaveBack || s.cur < (s.base+p.peak)/2 {
		// The usage gave back more than half of what the run rose: not
		// running out now, whatever the rate it rose at.
		return verdict{}, false
	}
	tto := (capacity - s.cur) / (r * (1 + min(stairsZ*rel, stairsMaxWiden)))
	near, next := p.cfg.NearTime, false
	if e := p.cfg.EvictionTime; e > 0 {
		near = min(near, e)
		headroom := capacity - s.cur
		// A run that has risen for stairsLongRun eviction times, in
		// stairsRing rises or more, is no load and no warm-up. When its
		// headroom is under its mean held step, its next step of that size
		// does not fit: it runs out at that step, whenever it comes. (Its
		// largest step instead marked notebook cells of random sizes on
		// fresh seeds; docs/predictor-round4.md.)
		// Nor, when it rises in bursts (nextBurst), does its next burst.
		long := s.n >= stairsRing && now-s.start >= stairsLongRun*e
		next = long && (headroom < s.stepSum/float64(s.n-1) || s.nextBurst(headroom))
		if s.epRises >= stairsRing && now-s.epStart >= stairsLongRun*e {
			// Its latest episode alone has risen that long: it is asked the
			// question as it stands, whether it runs out within the time an
			// eviction needs, unless its OOM is still more than
			// stairsLongSteps of its largest steps away: projecting that
			// far is extrapolating a staircase that may stop, so it is
			// asked only NearTime, as a younger run is.
			near = e
			if tto > p.cfg.NearTime && headroom > stairsLongSteps*s.maxStep() {
				near = min(p.cfg.NearTime, e)
			}
		}
	}
	if tto > near && !next {
		return verdict{}, false
	}
	return verdict{
		target: now + max(tto, now-p.first), riskAt: now + near, tto: tto, reason: ReasonTimeToOOM, rate: r, rateSD: r * rel,
	}, true
}

// maxStep is the largest step among the held rises but the oldest (whose
// step, as in stepSum, may be the jump that started the run). O(stairsRing).
func (s *stairs) maxStep() float64 {
	big := 0.0
	for j := 0; j < s.n-1; j++ {
		big = max(big, s.ring[(s.head+stairsRing-1-j)%stairsRing].step)
	}
	return big
}
