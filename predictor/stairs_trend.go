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
//   - a young run projected to run out within the eviction time is read as
//     without a horizon (nearOOM).
//
// Without a horizon, a run whose latest step holds most of its rise does
// not mark (latestStep).

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
