package predictor

// teeth reads growth by teeth over a level base: a search that runs a few
// steps at each size, frees what they took, and tries a size a factor
// larger, until one does not fit. Each tooth gives back its rise, so the
// runs of rises stop at every fall and the sawtooth reading, which asks the
// troughs to rise too, does not see it; and the last tooth rises within a
// second or two. What does show is the teeth's heights over the base: each
// a factor over the last. teeth marks when the heights of the last
// teethCount teeth (the one standing included) grew by a factor of at least
// teethMinRatio each time, the factors agree within teethSpread, the troughs
// between them are level, and the next tooth, the standing one's height
// times the smallest factor seen, would reach capacity. A bounded sawtooth
// (teeth of about the same height), two alternating sizes and cells of
// random sizes fail the factors; a run that grows to a level fails the
// falls. O(1) per sample.
type teeth struct {
	lo, hi  float64 // the trough before the standing tooth, its top so far
	hiT     float64 // when the top was reached
	up      bool    // a tooth is standing: usage rose a quantum over lo
	h       [teethCount - 1]float64
	base    [teethCount - 1]float64
	topT    [teethCount - 1]float64
	n       int // closed teeth held (≤ teethCount-1)
	started bool
}

const (
	// teethCount is how many teeth, the standing one included, must grow
	// by a factor.
	teethCount = 4
	// teethMinRatio is the least factor between neighbouring teeth, and
	// teethSpread the most the largest factor may exceed the smallest by.
	teethMinRatio = 1.1
	teethSpread   = 1.3
	// teethFall is how far a tooth must fall, in quanta, to close.
	teethFall = 2
)

// observe adds one usage sample; q is the quantum (stairsQuantum of capacity).
func (s *teeth) observe(t, used, q float64) {
	if !s.started {
		s.started, s.lo, s.hi, s.hiT = true, used, used, t
		return
	}
	if !s.up {
		if used < s.lo {
			s.lo = used
		}
		if used >= s.lo+q {
			s.up, s.hi, s.hiT = true, used, t
		}
		return
	}
	if used > s.hi {
		s.hi, s.hiT = used, t
	}
	if s.hi-used < teethFall*q {
		return
	}
	// The tooth fell: it closes with its height over the trough before it.
	if s.n == len(s.h) {
		copy(s.h[:], s.h[1:])
		copy(s.base[:], s.base[1:])
		copy(s.topT[:], s.topT[1:])
		s.n--
	}
	s.h[s.n], s.base[s.n], s.topT[s.n] = s.hi-s.lo, s.lo, s.hiT
	s.n++
	s.up, s.lo, s.hi, s.hiT = false, used, used, t
}

// check is the teeth's verdict at now.
func (s *teeth) check(p *Predictor, now, q float64) (verdict, bool) {
	if !s.up || s.n < len(s.h) {
		return verdict{}, false
	}
	cur := s.hi - s.lo
	lowest, highest := 1e300, 0.0
	prev := s.h[0]
	for i := 1; i <= s.n; i++ {
		h := cur
		if i < s.n {
			h = s.h[i]
		}
		r := h / prev
		lowest, highest = min(lowest, r), max(highest, r)
		prev = h
	}
	if lowest < teethMinRatio || highest > teethSpread*lowest {
		return verdict{}, false
	}
	for i := 1; i < s.n; i++ {
		if d := s.base[i] - s.base[i-1]; d > q || d < -q {
			return verdict{}, false
		}
	}
	if d := s.lo - s.base[s.n-1]; d > q || d < -q {
		return verdict{}, false
	}
	capacity := float64(p.cfg.Capacity)
	next := s.lo + cur*lowest
	if next <= capacity {
		return verdict{}, false
	}
	period := (s.hiT - s.topT[0]) / float64(s.n)
	if period <= 0 || (p.cfg.EvictionTime > 0 && period > p.cfg.EvictionTime) {
		return verdict{}, false
	}
	tto := max(0, s.topT[s.n-1]+2*period-now)
	return verdict{target: now + period, riskAt: now + period, tto: tto, reason: ReasonTimeToOOM, rate: (next - p.peak) / period}, true
}
