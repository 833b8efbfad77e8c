package predictor

import (
	"math"

	"github.com/migpro/migpro/estimator"
)

// Predictor follows one container's memory series. It is not safe for
// concurrent use: each container's telemetry is one ordered stream, so the
// owner of that stream calls Observe.
type Predictor struct {
	cfg     Config
	n       int
	dropped int
	first   float64
	last    float64
	peak    float64 // peak of Used since start: bursts are smoothed, growth kept
	peakReq float64

	// Time bins: the algorithm sees one point per Bin of T, whatever the
	// sampling rate. bin is the current bin's index, bins how many bins have
	// been seen, newBin whether the sample being observed opened one, and
	// binRaw the largest Used within the current bin.
	bin    int64
	bins   int
	newBin bool
	binRaw float64
	// allocs is the highest count of driver allocation calls seen, which
	// is cumulative: the latest (0 while unknown).
	allocs float64

	marked   bool
	decision Mark

	alg algorithm
}

// algorithm is one way of reading the peak series. step sees every accepted
// sample after the common bookkeeping and may return a mark.
type algorithm interface {
	step(p *Predictor, s Sample) (Mark, bool)
	forecast(p *Predictor, t float64) (float64, bool)
}

// New returns a predictor for one container. The only allocation is here:
// migpro's window ring is sized once.
func New(cfg Config) (*Predictor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Predictor{cfg: cfg}
	switch cfg.Algorithm {
	case Baseline:
		p.alg = &baseline{}
	default:
		p.alg = newMigpro(cfg.Window)
	}
	return p, nil
}

// maxAbsT bounds T. Unix nanoseconds are about 2e18; beyond 1e20 a value is
// not a time, and squared differences of such values would overflow the fit.
const maxAbsT = 1e20

// Observe feeds one sample. It returns the decision and true exactly once, on
// the sample that marks the container; later calls return false, so a caller
// can act on the boolean without its own latch. Samples whose T is NaN, out of
// range or goes backwards are dropped and counted, never fatal: telemetry is
// untrusted.
func (p *Predictor) Observe(s Sample) (Mark, bool) {
	if !(math.Abs(s.T) <= maxAbsT) || (p.n > 0 && s.T < p.last) {
		p.dropped++
		return Mark{}, false
	}
	if p.n == 0 {
		p.first = s.T
	}
	bin := int64(math.Floor((s.T - p.first) / p.cfg.Bin))
	p.newBin = p.n == 0 || bin != p.bin
	if p.newBin {
		p.bin, p.binRaw = bin, 0
		p.bins++
	}
	p.binRaw = max(p.binRaw, float64(s.Used))
	p.allocs = max(p.allocs, float64(s.Allocs))
	p.n++
	p.last = s.T
	if u := float64(s.Used); u > p.peak {
		p.peak = u
	}
	if r := float64(s.Requested); r > p.peakReq {
		p.peakReq = r
	}
	d, ok := p.alg.step(p, s)
	if p.marked || !ok {
		return Mark{}, false
	}
	d.At, d.Samples = s.T, p.n
	p.recommend(&d)
	p.marked, p.decision = true, d
	return d, true
}

// Marked returns the decision once the container has been marked.
func (p *Predictor) Marked() (Mark, bool) { return p.decision, p.marked }

// Forecast returns the algorithm's estimate of the peak at time t, and false
// while it has too few samples to fit. For the baseline this is its bound's
// value (upper bound, reuse ratio applied, frozen at convergence); for migpro
// it is the central estimate of the windowed fit.
func (p *Predictor) Forecast(t float64) (float64, bool) {
	f, ok := p.alg.forecast(p, t)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// Samples is the number of accepted samples; Dropped the number refused.
func (p *Predictor) Samples() int { return p.n }
func (p *Predictor) Dropped() int { return p.dropped }

// Peak is the largest Used seen so far.
func (p *Predictor) Peak() uint64 { return uint64(p.peak) }

func (p *Predictor) recommend(d *Mark) {
	if len(p.cfg.Profiles) == 0 {
		return
	}
	need := estimator.Need{Bytes: d.Forecast, Margin: p.cfg.Margin, ContextBytes: p.cfg.ContextBytes}
	prof, ok := estimator.Pick(p.cfg.Profiles, need.Total())
	d.Profile, d.Fits = prof.Name, ok
}

// exceedProb is the probability that a normal value with this mean and
// standard deviation lies above limit.
func exceedProb(mean, sd, limit float64) float64 {
	if sd <= 0 {
		switch {
		case mean > limit:
			return 1
		case mean < limit:
			return 0
		}
		return 0.5
	}
	return 0.5 * math.Erfc((limit-mean)/(sd*math.Sqrt2))
}

func toBytes(f float64) uint64 {
	if f <= 0 || math.IsNaN(f) {
		return 0
	}
	if f >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(math.Ceil(f))
}

// leadFor is the lead time with no horizon: factor × elapsed (never under
// MinLead), and never beyond EvictionTime when one is set: the question is
// whether the container runs out within the time an eviction needs.
func (c *Config) leadFor(factor, elapsed float64) float64 {
	lead := max(c.MinLead, factor*elapsed)
	if c.EvictionTime > 0 {
		lead = min(lead, c.EvictionTime)
	}
	return lead
}
