package predictor

import "math"

// saw reads growth under a sawtooth: a training step whose activations fill
// and are freed every step, on a base that grows. Sampled once a second, the
// top of each tooth is seen only when a poll lands near it, and the phase a
// poll lands at drifts slowly from tooth to tooth (it beats with the step's
// length), so the peak series climbs a staircase of records up to a minute
// apart: more than a quarter of migpro's longest window, whose quarter test
// then fails. saw reads the series in blocks long enough to hold a tooth,
// and keeps each block's largest and smallest usage: the upper envelope (the
// tops of the teeth) and the lower one (the troughs, the base).
//
// Growth under a sawtooth is when, over the last sawBlocks blocks,
//   - memory was given back in every block: the trough of each block lies
//     well under the top of the block before it (a loading ramp or a
//     staircase never gives back; this is what keeps loads and warm pools
//     out of this reading);
//   - the tops and the troughs both trend up, the tops significantly at z,
//     and the newer half of the blocks holds a higher top and a higher
//     trough than the older half (an evaluation peak that comes and goes,
//     or bursts over a flat base, leave the troughs where they were);
//   - the upper bound of the tops' fit crosses capacity within the lead time.
type saw struct {
	blk        int64 // index of the block being filled
	hi, lo     float64
	tsum, tn   float64 // mean time of the block's samples
	ring       [sawBlocks]block
	head, held int
	hit        bool // the last completed blocks read as growth under a sawtooth
	fit        linFit
}

type block struct{ t, hi, lo float64 }

const (
	// sawBins is a block's length in bins (16 s at the agent's 2 s bins):
	// longer than a training step of up to 12 s.
	sawBins = 8
	// sawBlocks is how many blocks the reading spans (128 s at 2 s bins).
	sawBlocks = 8
	// sawRelease is how far under the previous block's top a block's trough
	// must fall, in blocks' worth of the tops' fitted growth.
	sawRelease = 2
)

// observe adds one sample; bin is the predictor's bin index.
func (s *saw) observe(bin int64, t, used, z float64) {
	b := bin / sawBins
	if s.tn > 0 && b != s.blk {
		s.close(z)
	}
	if s.tn == 0 {
		s.blk, s.hi, s.lo, s.tsum = b, used, used, 0
	}
	s.hi, s.lo = max(s.hi, used), min(s.lo, used)
	s.tsum += t
	s.tn++
}

// close completes the current block and judges the blocks held.
func (s *saw) close(z float64) {
	s.ring[s.head] = block{t: s.tsum / s.tn, hi: s.hi, lo: s.lo}
	s.head = (s.head + 1) % sawBlocks
	s.held = min(s.held+1, sawBlocks)
	s.tn = 0
	s.hit = false
	if s.held < sawBlocks {
		return
	}
	// Oldest first, so the fit's origin is the oldest block.
	var lo linFit
	s.fit.reset()
	for k := range sawBlocks {
		q := s.ring[(s.head+k)%sawBlocks]
		s.fit.add(q.t, q.hi)
		lo.add(q.t, q.lo)
	}
	a := s.fit.slope()
	if a <= 0 || a < z*s.fit.slopeSE() {
		return
	}
	if l := lo.slope(); l <= 0 || l < z*lo.slopeSE() {
		return
	}
	const half = sawBlocks / 2
	var oldHi, newHi float64
	oldLo, newLo := math.Inf(1), math.Inf(1)
	for k := range sawBlocks {
		q := s.ring[(s.head+k)%sawBlocks]
		if k > 0 {
			p := s.ring[(s.head+k-1)%sawBlocks]
			if p.hi-q.lo < sawRelease*a*(q.t-p.t) {
				return // nothing given back: a ramp, not a sawtooth
			}
		}
		if k < half {
			oldHi, oldLo = max(oldHi, q.hi), min(oldLo, q.lo)
		} else {
			newHi, newLo = max(newHi, q.hi), min(newLo, q.lo)
		}
	}
	first, last := s.ring[s.head], s.ring[(s.head+sawBlocks-1)%sawBlocks]
	span := (last.t - first.t) / 2
	if newHi-oldHi < aliveRatio*a*span || newLo <= oldLo {
		return
	}
	s.hit = true
}

// check is the lead-time test on the tops' fit, as migpro's windows do it.
func (s *saw) check(p *Predictor, now float64) (verdict, bool) {
	if !s.hit {
		return verdict{}, false
	}
	capacity := float64(p.cfg.Capacity)
	a := s.fit.slope()
	upper := func(t float64) float64 { return s.fit.at(t) + p.cfg.Z*s.fit.sigma() }
	if h := p.cfg.Horizon; h > now {
		return verdict{target: h, riskAt: h, reason: ReasonHorizon, saw: true}, upper(h) > capacity
	}
	elapsed := now - p.first
	lead := p.cfg.leadFor(p.cfg.LeadFactor, elapsed)
	tto := max(0, (capacity-max(upper(now), p.peak))/a)
	if tto > lead {
		return verdict{}, false
	}
	return verdict{
		target: now + max(tto, elapsed), riskAt: now + lead, tto: tto, reason: ReasonTimeToOOM, saw: true,
	}, true
}
