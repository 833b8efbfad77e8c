package tracegen

import "math"

// The growing shapes of the fifth sealed set: each runs out of its
// instance and must be marked before it does (at least 5 s ahead at the
// shim's rate; with a declared horizon, by a quarter of its way to the
// OOM). Most write their growth in their own units (tokens, items,
// adapter ranks, imbalance) and scale them so that the instance fills
// about a drawn time after the growth starts; docs/predictor-sealed5.md
// says what each one follows.

// s5ConcatState: a streaming model that keeps its running state on the
// device and grows it by concatenation, chunk after chunk: every chunk
// allocates a new tensor a little larger than the last, copies, and frees
// the old one. The caching allocator cannot reuse the freed, smaller
// blocks, so what it reserves climbs faster than the state; when the
// device is full (or, in half the runs, past a threshold the process
// set) it gives its cache back and goes on. The OOM comes when the old
// and the new state no longer fit side by side.
func s5ConcatState(p *s5Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.1, 0.4)*room, p.draw(1e9, 3e9))
	p.to(p.level + p.draw(0.02, 0.06)*room)
	p.stay(p.draw(5, 60))
	base := p.level
	avail := p.left()
	period := p.draw(0.2, 2)
	chunk := avail / (2 * p.draw(300, 2400) / period)
	threshold := avail
	if p.r.IntN(2) == 0 {
		threshold = p.draw(0.6, 0.9) * avail
	}
	state, reserved := chunk, chunk
	p.to(base + reserved)
	for !p.over() && p.now() < s5Limit {
		p.stay(p.jitter(period, 0.2))
		next := state + chunk*math.Exp(0.3*p.r.NormFloat64())
		if reserved+next > threshold {
			reserved = state
			p.to(base + reserved)
		}
		reserved += next
		p.to(base + reserved)
		state = next
	}
	return 0
}

// s5TrafficRamp: a server that keeps every request's key-value cache as
// one growing tensor (no paging) while traffic rises through the day.
// Requests overlap more and more, and the caching allocator keeps the
// highest total it has needed, so the device level climbs in irregular
// steps until a busy moment does not fit.
func s5TrafficRamp(p *s5Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.2, 0.5)*room, p.draw(1e9, 3e9))
	p.stay(p.draw(0.5, 5))
	p.to(p.level + p.draw(0.02, 0.05)*room)
	p.stay(p.draw(5, 60))
	t0, ramp := p.now(), p.draw(600, 3600)
	rate0, gain := p.draw(0.2, 2), p.draw(1, 4)
	tps, prompt, answer := p.draw(15, 60), p.draw(200, 2000), p.draw(100, 800)
	// live[k] = a[k] + b[k]*k: every request adds its prompt at once and
	// tps tokens a second until its answer is done (difference arrays).
	n := int(math.Min(3*ramp, s5Limit-t0) * ShimHz)
	a, b := make([]float64, n+1), make([]float64, n+1)
	top := rate0 * (1 + gain*float64(n)/ShimHz/ramp)
	for t := p.r.ExpFloat64() / top; t*ShimHz < float64(n); t += p.r.ExpFloat64() / top {
		if p.r.Float64() > rate0*(1+gain*t/ramp)/top {
			continue
		}
		s := int(t * ShimHz)
		e := min(n, s+1+int(answer*math.Exp(0.6*p.r.NormFloat64())/tps*ShimHz))
		pt, per := prompt*math.Exp(0.6*p.r.NormFloat64()), tps/ShimHz
		a[s] += pt - per*float64(s)
		a[e] -= pt - per*float64(s)
		b[s] += per
		b[e] -= per
	}
	full := int(p.draw(0.4, 0.9) * ramp * ShimHz)
	hw, ha, hb, need := make([]float64, n), 0.0, 0.0, 0.0
	for k := range n {
		ha, hb = ha+a[k], hb+b[k]
		need = math.Max(need, ha+hb*float64(k))
		hw[k] = need
	}
	scale := 1.02 * p.left() / math.Max(hw[min(full, n-1)], 1)
	base, seg := p.level, p.draw(2<<20, 20<<20)
	for k := 0; k < n && !p.over(); k++ {
		p.to(base + math.Ceil(hw[k]*scale/seg)*seg)
	}
	return 0
}

// s5BacklogQueue: a pipeline stage that produces results on the device
// faster than the next stage, which drains them in batches, takes them
// away. Nothing pushes back, so the queue wanders upward. Half the runs
// keep the queue's peak reserved (a caching allocator); in the others the
// memory is given back after every drain, so the level rises and falls.
func s5BacklogQueue(p *s5Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.1, 0.4)*room, p.draw(1e9, 3e9))
	p.stay(p.draw(5, 60))
	t0, full := p.now(), p.draw(600, 3000)
	rate, ratio, drain := p.draw(2, 15), p.draw(0.7, 0.97), p.draw(0.5, 10)
	var e s5Events
	queue, next := 0.0, t0+p.jitter(drain, 0.3)
	for t := t0 + p.r.ExpFloat64()/rate; t < math.Min(t0+3*full, s5Limit); t += p.r.ExpFloat64() / rate {
		for next < t {
			d := p.jitter(drain, 0.3)
			out := math.Min(queue, ratio*rate*d*math.Exp(0.3*p.r.NormFloat64()))
			e.add(next, -out)
			queue -= out
			next += d
		}
		u := math.Exp(0.2 * p.r.NormFloat64())
		e.add(t, u)
		queue += u
	}
	p.play(e, e.scaleFor(t0+full, p.left()), p.draw(2<<20, 20<<20), p.r.IntN(2) == 0)
	return 0
}

// s5AdapterHoard: a server that serves many tenants, each with a small
// adapter of its own over one base model. An adapter is loaded the first
// time its tenant calls and is never evicted (the limit on loaded
// adapters is set higher than the device holds). Tenants join one by one
// and now and then a batch of them is onboarded together.
func s5AdapterHoard(p *s5Tape) float64 {
	room := p.start()
	bps := p.draw(0.5e9, 3e9)
	p.copyIn(p.draw(0.3, 0.55)*room, bps)
	p.stay(p.draw(0.5, 5))
	p.to(p.level + p.draw(0.1, 0.25)*room)
	p.stay(p.draw(10, 120))
	t0, full, gap := p.now(), p.draw(900, 3600), p.draw(10, 120)
	ranks := []float64{8, 16, 16, 32, 64}
	var e s5Events
	for t := t0 + gap*p.r.ExpFloat64(); t < math.Min(t0+3*full, s5Limit); t += gap * p.r.ExpFloat64() {
		n := 1
		if p.r.Float64() < 0.1 {
			n = 3 + p.r.IntN(8)
		}
		for range n {
			t += p.draw(0.1, 1.5)
			e.add(t, ranks[p.r.IntN(len(ranks))])
		}
	}
	scale := e.scaleFor(t0+full, p.left())
	for i, t := range e.at {
		if p.over() || p.now() > s5Limit {
			break
		}
		p.stay(t - p.now())
		p.copyIn(e.units[i]*scale, bps)
	}
	return 0
}

// s5MoEImbalance: a mixture-of-experts training Job that declares its
// length and drops no tokens, so each step's expert buffers are sized by
// the busiest expert. As the router specialises, the busiest expert gets
// a larger share, with noise from step to step; the caching allocator
// keeps the largest buffers so far, so the level creeps up in uneven
// steps.
func s5MoEImbalance(p *s5Tape) float64 {
	planned := p.draw(1200, 4800)
	room := p.start()
	p.copyIn(p.draw(0.1, 0.25)*room, p.draw(1e9, 3e9))
	p.to(p.level + p.draw(0.1, 0.2)*room)
	p.glide(p.level+p.draw(0.05, 0.15)*room, p.draw(0.3, 2))
	p.stay(p.draw(2, 20))
	t0 := p.now()
	full := t0 + p.draw(0.3, 0.85)*planned
	step, tau, sigma := p.draw(0.5, 3), p.draw(20, 200), p.draw(0.02, 0.1)
	keep := math.Exp(-step / tau)
	var e s5Events
	noise, last := 0.0, 0.0
	for t := t0 + step; t < math.Min(t0+3*(full-t0), s5Limit); t += p.jitter(step, 0.1) {
		noise = keep*noise + math.Sqrt(1-keep*keep)*p.r.NormFloat64()
		u := math.Max(0, (t-t0)/(full-t0)+sigma*noise)
		e.add(t, u-last)
		last = u
	}
	p.play(e, e.scaleFor(full, p.left()), p.draw(2<<20, 20<<20), true)
	return planned
}

// s5OrphanEvaluators: a training Job that declares its length and starts a
// separate evaluation process at every evaluation interval. The evaluator
// creates its own context, loads the checkpoint and runs, but never
// exits (it hangs on shutdown), so each one keeps its context, weights
// and cached activations: the level climbs one evaluator at a time until
// one does not fit.
func s5OrphanEvaluators(p *s5Tape) float64 {
	planned := p.draw(2400, 7200)
	room := p.start()
	bps := p.draw(0.5e9, 3e9)
	p.copyIn(p.draw(0.1, 0.25)*room, bps)
	p.to(p.level + p.draw(0.1, 0.25)*room)
	p.stay(p.draw(5, 60))
	n := 5 + p.r.IntN(8)
	every := (p.draw(0.3, 0.85)*planned - p.now()) / float64(n)
	each := p.left() / (float64(n-1) + p.draw(0.3, 0.9))
	for !p.over() && p.now() < s5Limit {
		p.stay(p.jitter(every, 0.05))
		from := p.level
		p.context(0.4 * each / p.size)
		p.stay(p.draw(0.5, 3))
		p.copyIn((from+each-p.level)*p.draw(0.5, 0.8), bps)
		if p.over() {
			break
		}
		p.glide(from+each, p.draw(0.2, 2))
	}
	return planned
}
