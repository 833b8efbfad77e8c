package predictor

// baseline is the plain algorithm, kept deliberately plain so
// that every migpro addition can be measured against it:
//   - least squares on the peak-since-start series, from the first sample;
//   - forecast a·T+b+z·σ at the known horizon T;
//   - with requested bytes, forecast requested the same way and multiply by a
//     linear fit of physical/requested (the inverse of the reuse ratio);
//   - convergence: the last ConvergeWindow forecasts lie within ConvergeTol of
//     their mean; then the forecast is frozen and compared with capacity once.
type baseline struct {
	used  linFit // (t, peak used)
	req   linFit // (t, peak requested)
	ratio linFit // (t, used/requested)
	// noReq latches once any sample lacks requested bytes: a ratio fitted on
	// part of the series would be meaningless.
	noReq bool

	recent    [maxConvergeWindow]float64
	nRecent   int
	converged bool
}

func (b *baseline) step(p *Predictor, s Sample) (Mark, bool) {
	if b.converged {
		return Mark{}, false
	}
	b.used.add(s.T, p.peak)
	if s.Requested == 0 {
		b.noReq = true
	} else if !b.noReq {
		b.req.add(s.T, p.peakReq)
		b.ratio.add(s.T, float64(s.Used)/float64(s.Requested))
	}
	if p.n < p.cfg.MinSamples {
		return Mark{}, false
	}
	upper, central, sd := b.bound(p, p.cfg.Horizon)
	w := p.cfg.ConvergeWindow
	copy(b.recent[:w-1], b.recent[1:w])
	b.recent[w-1] = upper
	if b.nRecent < w {
		b.nRecent++
		if b.nRecent < w {
			return Mark{}, false
		}
	}
	lo, hi, sum := b.recent[0], b.recent[0], 0.0
	for _, f := range b.recent[:w] {
		lo, hi, sum = min(lo, f), max(hi, f), sum+f
	}
	mean := sum / float64(w)
	if mean <= 0 || (hi-lo)/mean > p.cfg.ConvergeTol {
		return Mark{}, false
	}
	b.converged = true
	capacity := float64(p.cfg.Capacity)
	if upper <= capacity {
		return Mark{}, false
	}
	return Mark{
		Reason:     ReasonHorizon,
		Forecast:   toBytes(upper),
		Confidence: exceedProb(central, sd, capacity),
		Horizon:    p.cfg.Horizon,
	}, true
}

// bound returns the baseline's forecast at t, the central value without the
// z·σ term, and the standard deviation that term used.
func (b *baseline) bound(p *Predictor, t float64) (upper, central, sd float64) {
	z := p.cfg.Z
	if b.noReq || b.req.n == 0 {
		central, sd = b.used.at(t), b.used.sigma()
		return central + z*sd, central, sd
	}
	r := b.ratio.at(t)
	central, sd = b.req.at(t)*r, b.req.sigma()*r
	return central + z*sd, central, sd
}

func (b *baseline) forecast(p *Predictor, t float64) (float64, bool) {
	if b.used.n < 2 {
		return 0, false
	}
	upper, _, _ := b.bound(p, t)
	return upper, true
}

// Converged reports whether the baseline has stopped forecasting. Always
// false for migpro, which keeps watching for growth that starts late.
func (p *Predictor) Converged() bool {
	b, ok := p.alg.(*baseline)
	return ok && b.converged
}
