package predictor

// With a horizon, a run of rises is projected to the known end, often tens
// of minutes ahead, so it must be a trend that is still going, measured
// after the load and its warm-up (docs/predictor-horizon.md):
//   - its rises span stairsHorizonSpan (rate);
//   - it rose in both halves of the time from its oldest held rise to now,
//     each by stairsHalfShare of half its rise (risesEachHalf): a warm-up
//     long gone, then a flat line, rose in one half only;
//   - its latest step did not come after a silence of stairsSilence times
//     any gap the run had before it (stepAfterStop): the rises before had
//     stopped, and a single step after them is not a trend.

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
