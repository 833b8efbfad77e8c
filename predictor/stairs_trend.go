package predictor

// The rules that tell a run of rises still going from one that stopped, or
// from a single step (docs/predictor-horizon.md). With a horizon a run is
// projected to the known end, often tens of minutes ahead, so it must be a
// trend that is still going, measured after the load and its warm-up:
//   - its rises span stairsHorizonSpan (rate);
//   - it rose in both halves of the time from its oldest held rise to now,
//     each by stairsHalfShare of half its rise (risesEachHalf): a warm-up
//     long gone, then a flat line, rose in one half only;
//   - its latest step did not come after a silence of stairsSilence times
//     any gap the run had before it (stepAfterStop): the rises before had
//     stopped, and a single step after them is not a trend;
//   - a young run projected to run out within the eviction time, or
//     sooner than stairsHorizonReach times what has been watched, is read
//     as without a horizon (steepForHorizon);
//   - a reservation, one step over stairsBreakSize times the run's other
//     steps, ended what came before it: only the rises after it are judged
//     (afterReserve);
//   - its latest step did not come after a wait over stairsStepSilence
//     times the mean pause between its earlier steps (stepAfterPauses).
//
// Without a horizon, a run whose latest step holds most of its rise does
// not mark (latestStep); a long run whose headroom is under its mean burst
// does (nextBurst).

const (
	// stairsHorizonSpan is the shortest time, in seconds, the rises of a
	// run must span before it is projected to a horizon. A training
	// warm-up (activations, gradients, the optimiser's moments) rises for
	// a few seconds after its load and stops; growth that a horizon lets
	// migpro mark early goes on for minutes.
	stairsHorizonSpan = 16
	// stairsHalfShare is the share of half the run's rise that each half
	// of its time must hold.
	stairsHalfShare = 0.3
	// stairsSilence: a latest step after a silence over this many times
	// the run's longest earlier gap comes after the run stopped.
	stairsSilence = 8
	// stairsStepShare and stairsStepTime: see latestStep. A steady run's
	// latest step is one of its 8 held rises; growth at 0.5 GB/s on 10 GB
	// rises 2.5 % in stairsStepTime against the 30 % an episode of 6 s
	// holds. A window of 1 s instead caught fast growth at 10 Hz.
	stairsStepShare = 0.4
	stairsStepTime  = 0.5
	// stairsStepSilence: with a horizon, a latest step after a wait over
	// this many times the mean pause between the run's earlier steps came
	// after they stopped (stepAfterPauses). 4 and 5 spared more quiet runs
	// but let a tuned bursty KV cache pass a quarter of its way
	// (docs/predictor-round3.md).
	stairsStepSilence = 6
	// stairsHorizonReach: with a horizon, a young run (one that has risen
	// for less than an eviction time) whose OOM, at its own rate, is
	// projected sooner than this many times the time the container has
	// been watched is read as without a horizon. By its own reckoning it
	// is already past a third of its way to the OOM, so the horizon's
	// early mark (by a quarter of the way) cannot be what it needs: that
	// mark is for growth whose OOM lies well beyond what has been watched.
	// A climb that steep, late in a quiet run, is one stage of it (data
	// piled up to a spilling limit, shards or models loaded one after
	// another, a warm-up's staircase) and stops; growth that steep is
	// fast, and the question asked without a horizon, whether it runs out
	// within the time an eviction needs, catches it. At 3 (a quarter of
	// the way, exactly) five times as many growing runs went past their
	// quarter (the tuned bursty KV cache at 1 Hz among them); at 1.5 half
	// as many quiet runs were spared (docs/predictor-round5.md).
	stairsHorizonReach = 2
	// stairsNextBursts: a long run is asked whether its next burst fits
	// once it has risen in this many bursts (nextBurst). At 4, seeds
	// nobody tuned on marked 4 more quiet runs (a decoder pool per stream
	// once the last stream allowed had joined, notebook cells), at 6 one
	// (docs/predictor-round6.md).
	stairsNextBursts = 6
)

// risesEachHalf reports whether the run rose in both halves of the time
// from its oldest rise to now, each by at least stairsHalfShare of half its
// rise. O(stairsRing).
func (s *stairs) risesEachHalf(oldest, newest rise, now float64) bool {
	mid := (oldest.t + now) / 2
	at := oldest.y
	for j := 0; j < s.n; j++ {
		if q := s.ring[(s.head+stairsRing-1-j)%stairsRing]; q.t <= mid {
			at = max(at, q.y)
			break
		}
	}
	need := stairsHalfShare * (newest.y - oldest.y) / 2
	return at-oldest.y >= need && newest.y-at >= need
}

// stepAfterStop reports whether the run's latest step (its newest rises,
// within stairsPause of each other) came after a silence over stairsSilence
// times the longest gap the run had before it, the pause before the run
// included. O(stairsRing).
func (s *stairs) stepAfterStop(newest rise) bool {
	for j := 1; j < s.n; j++ {
		q := s.ring[(s.head+stairsRing-1-j)%stairsRing]
		if q.t >= newest.t-stairsPause {
			continue
		}
		longest := 0.0
		for i := j + 1; i < s.n-1; i++ {
			longest = max(longest, s.ring[(s.head+stairsRing-1-i)%stairsRing].gap)
		}
		if s.anchored && s.n < stairsRing {
			longest = max(longest, s.ring[0].gap)
		}
		return newest.t-q.t > stairsSilence*longest
	}
	return false
}

// steepForHorizon reports whether a young climb (a run of rises, or a
// window), whose OOM at its central rate is projected tto ahead after
// elapsed seconds watched, is asked the question without a horizon: its
// OOM is within the eviction time (nearOOM), or sooner than reach times
// elapsed (stairsHorizonReach for a run, windowHorizonReach for a window).
func steepForHorizon(cfg *Config, tto, elapsed, reach float64) bool {
	return nearOOM(cfg, tto) || tto < reach*elapsed
}

// nearOOM reports whether an OOM projected tto ahead, at the central rate,
// is within the eviction time: then the horizon says nothing the question
// asked without it does not, and a rise is read as it is without one.
func nearOOM(cfg *Config, tto float64) bool {
	return cfg.EvictionTime > 0 && tto <= cfg.EvictionTime
}

// latestStep is the run's latest step: what its rises within stairsStepTime
// of the newest one rose, one allocation as NVML sees it (a jump read over
// one or two ticks). Without a horizon a run whose latest step holds more
// than stairsStepShare of the rise it is judged on does not mark: a pool
// that doubles its last region once more, which then holds as much as all
// the earlier ones together, is one step, not a trend. O(stairsRing).
func (s *stairs) latestStep(newest rise) float64 {
	base := newest.y - newest.step
	for j := 1; j < s.n; j++ {
		q := s.ring[(s.head+stairsRing-1-j)%stairsRing]
		if q.t < newest.t-stairsStepTime {
			break
		}
		base = q.y - q.step
	}
	return newest.y - base
}

// afterReserve returns the held rises after the run's reservation: a step
// over stairsBreakSize times the mean of the run's other steps (a warm-up's
// activations, a cache reserved at once). Growth comes in steps of similar
// size; a rise that large after a run's steps already starts a new run
// (observe), and one that comes first, followed by small steps, ended what
// came before it just the same. The rises after it are judged alone, from its
// top, and the gap after it is left out when it holds most of what they span
// (a pause after the reservation). O(stairsRing).
func (s *stairs) afterReserve() (episodeOf, bool) {
	if s.n < 3 {
		return episodeOf{}, false
	}
	at := func(j int) rise { return s.ring[(s.head+stairsRing-1-j)%stairsRing] }
	big, sum, j := 0.0, 0.0, 0
	for i := 0; i < s.n; i++ {
		st := at(i).step
		sum += st
		if st > big {
			big, j = st, i
		}
	}
	if big <= stairsBreakSize*(sum-big)/float64(s.n-1) {
		return episodeOf{}, false
	}
	e := episodeOf{first: at(j), gaps: j}
	if j >= 1 && at(j-1).gap > stairsEpisodeShare*(at(0).t-at(j).t) {
		e.first, e.gaps = at(j-1), j-1
	}
	for i := 0; i < e.gaps; i++ {
		g := at(i).gap
		e.gapSum += g
		e.gapSqSum += g * g
	}
	return e, true
}

// stepAfterPauses reports whether the run's latest step (its rises after
// the newest gap of stairsPause or more) came after a wait over
// stairsStepSilence times the mean of the pauses between its earlier steps
// (the held gaps of stairsPause or more, the pause before the run included
// while the run is anchored). Steps that came every so often, then a far
// longer wait, then one more step (a communication library's buffers, then
// its buckets rebuilt a minute later) stopped before that step, which alone
// is not a trend. The stairsSilence rule compares the wait with the
// longest earlier gap, the pause included, which a warm-up's own pause
// makes long; this one compares it with the steps' usual pause.
// O(stairsRing).
func (s *stairs) stepAfterPauses() bool {
	silence, sum, k := 0.0, 0.0, 0
	latest := true
	for j := 0; j < s.n; j++ {
		q := s.ring[(s.head+stairsRing-1-j)%stairsRing]
		if latest {
			if q.gap >= stairsPause {
				silence, latest = q.gap, false
			}
			continue
		}
		if q.gap >= stairsPause && (j < s.n-1 || s.anchored) {
			sum += q.gap
			k++
		}
	}
	return k > 0 && silence > stairsStepSilence*sum/float64(k)
}

// burst counts the run's bursts: its rises between two gaps of stairsPause
// or more, the rises one event brings (a model's copy loaded, a request's
// cache, a batch's buffers), which the quantum cuts into several rises. A
// rise after such a gap ends the burst before it. O(1).
func (s *stairs) burst(gap float64) {
	if gap < stairsPause {
		return
	}
	if b := s.level - s.burstFrom; b > 0 {
		s.burstSum += b
		s.bursts++
	}
	s.burstFrom = s.level
}

// nextBurst reports whether a long run that rose in stairsNextBursts bursts
// or more has less headroom than its mean burst: its next burst of that
// size does not fit, whenever it comes. The mean held step asks the same of
// a staircase whose every step is one rise; a burst is many rises (the
// quantum is 2 % of the instance), so only the burst says what the next
// event needs. O(1).
func (s *stairs) nextBurst(headroom float64) bool {
	return s.bursts >= stairsNextBursts && headroom < s.burstSum/float64(s.bursts)
}

// lifetimeReaches reports whether, with a horizon h, the container's own
// rate since its load ended (since its first sample while no pause has
// ended a load) carries its peak past capacity by h. A run of rises is
// read on its last stairsRing rises; a run that has risen slowly for most
// of its life and climbs faster for a while (a batch of longer inputs
// sorted last, a fold's larger copy) is projected to the horizon at the
// while's rate, past an instance that its life's rate never reaches: such
// a climb is not read as growth to the horizon. O(1).
func (s *stairs) lifetimeReaches(p *Predictor, now, h, capacity float64) bool {
	t0, y0 := p.first, s.firstPeak
	if s.loaded {
		t0, y0 = s.loadEnd, s.loadPeak
	}
	if now <= t0 {
		return true
	}
	return p.peak+(p.peak-y0)/(now-t0)*(h-now) > capacity
}
