package tracegen

import "math"

// The quiet shapes of the eighth sealed set: each stays under 90% of its
// instance, everything the device adds counted, for its whole planned
// length and must never be marked. docs/predictor-sealed8.md says what
// each one follows.

// s8OffloadStream: inference on a model larger than the instance, its
// layers kept in host memory and copied up one at a time as the forward
// pass reaches them, a few layers ahead; a layer's buffer is given back to
// the device once it has run. Requests come at random, each a few to a
// hundred forward passes; while one runs the level swings with the sizes
// of the layers in flight, many times a second, and between requests it
// falls back to what stays resident.
func s8OffloadStream(p *s8Tape) float64 {
	room := p.start()
	p.copyUp(0.03, 0.1, room)      // embeddings, head, norms: resident
	p.add(p.draw(0.1, 0.4) * room) // the key-value cache, preallocated
	p.hold(p.draw(3, 30))
	base := p.v
	ahead := 1 + p.r.IntN(3) // layers copied ahead of the one running
	largest := math.Min(p.draw(1e9, 2.5e9), p.draw(0.6, 0.95)*p.room()/float64(ahead+1))
	n := 16 + p.r.IntN(65)
	layers := make([]float64, n)
	mean := 0.0
	for j := range layers {
		layers[j] = largest * p.draw(0.3, 1)
		mean += layers[j] / float64(n)
	}
	per := mean / p.draw(8e9, 24e9) // seconds a layer, copy-bound
	busy := p.draw(0.2, 0.9)
	rate := busy / (50 * float64(n) * per) // requests a second
	end := p.t + p.draw(1500, 4800)
	for p.t < end {
		p.hold(math.Min(p.r.ExpFloat64()/rate, end-p.t))
		if p.t >= end {
			break
		}
		passes := math.Ceil(p.draw(4, 96))
		p.trace(passes*float64(n)*per, func(x float64) float64 {
			j := int(x / per)
			held := 0.0
			for k := range ahead + 1 {
				held += layers[(j+k)%n]
			}
			return base + held
		})
		p.set(base)
	}
	return end
}

// s8ManagedPageIn: a recommender whose embedding table lives in managed
// memory, so its pages move to the device the first time a lookup touches
// them and stay. Lookups follow popularity: the hot pages arrive within
// the first minute, the long tail over tens of minutes, and the level
// climbs on a smooth, ever-slower curve toward the pages traffic ever
// touches, which fit. Each batch's activations come and go on top.
func s8ManagedPageIn(p *s8Tape) float64 {
	room := p.start()
	p.copyUp(0.05, 0.2, room) // the dense part of the model
	p.hold(p.draw(2, 20))
	acts := p.draw(0.01, 0.05) * room
	base := p.v
	touched := p.draw(0.4, 0.85) * (p.room() - acts)
	hot := p.draw(0.2, 0.6)
	tauHot, tauCold := p.draw(5, 60), p.draw(300, 3000)
	page := 2 * mib
	batch := 1 / p.draw(2, 20)
	t0, res := p.t, 0.0
	end := p.t + p.draw(1500, 4800)
	for p.t < end {
		x := p.t - t0
		want := touched * (hot*(1-math.Exp(-x/tauHot)) + (1-hot)*(1-math.Exp(-x/tauCold)))
		res = math.Max(res, math.Min(touched, math.Floor(want*p.draw(0.98, 1.02)/page)*page))
		p.set(base + res + acts*p.draw(0.8, 1))
		p.hold(batch * p.draw(0.5, 0.9))
		p.set(base + res)
		p.hold(batch * p.draw(0.1, 0.5))
	}
	return end
}

// s8TrafficTide: a serving process that allocates each request's
// key-value cache as the request needs it and gives it back to the device
// when the request ends, with at most a set number of requests running at
// once. Its traffic swells and ebbs over the run: quiet at first, a peak
// tens of minutes in, quiet again at the end, so the level rises for many
// minutes, hovers and falls, noisy with the requests.
func s8TrafficTide(p *s8Tape) float64 {
	room := p.start()
	p.copyUp(0.15, 0.45, room)
	p.hold(p.draw(5, 40))
	base := p.v
	most := 16 + p.r.IntN(113) // requests running at once, at most
	prompt, out := p.draw(100, 1500), p.draw(50, 600)
	longest := 3 * (prompt + out)
	perTok := p.draw(0.5, 0.95) * p.room() / (float64(most) * longest)
	tps := p.draw(10, 40)
	peak := p.draw(0.4, 1.1) * float64(most) / (out / tps)
	low := p.draw(0.03, 0.2) * peak
	t0 := p.t
	end := t0 + p.draw(1500, 4800)
	top := t0 + p.draw(0.3, 0.7)*(end-t0)
	rate := func(t float64) float64 {
		f := (t - t0) / (top - t0)
		if t > top {
			f = (end - t) / (end - top)
		}
		return low + (peak-low)*(1-math.Cos(math.Pi*math.Max(0, f)))/2
	}
	var running, queued []s8Request
	dt := 0.5
	next := t0 + p.r.ExpFloat64()/rate(t0)
	for p.t < end {
		for ; next < p.t+dt; next += p.r.ExpFloat64() / rate(next) {
			queued = append(queued, s8Request{held: math.Min(1.5*(prompt+out), prompt*p.lognormal(0.7)), todo: math.Min(1.5*(prompt+out), out*p.lognormal(0.6))})
		}
		for len(queued) > 0 && len(running) < most {
			running, queued = append(running, queued[0]), queued[1:]
		}
		var total float64
		running, total = s8Decode(running, func() float64 { return tps * dt * p.draw(0.8, 1.2) })
		p.ramp(base+total*perTok, dt)
	}
	return end
}

// s8NeighborList: a molecular-dynamics run that keeps its particles'
// positions, velocities and forces on the device and a neighbour list
// rebuilt every few steps. The list's buffer is sized with slack at its
// first build and reallocated with slack whenever a rebuild finds more
// pairs than it holds; as the system settles and grows denser the pairs
// rise toward their equilibrium, so the buffer grows a few times, ever
// more rarely, and then stays. Trajectory frames are staged on the device
// and flushed to the host in batches.
func s8NeighborList(p *s8Tape) float64 {
	room := p.start()
	arrays := 5 + p.r.IntN(6)
	state := p.draw(0.05, 0.2) * room
	for range arrays {
		p.add(state / float64(arrays))
		p.hold(p.draw(0.02, 0.2))
	}
	avail := p.room()
	slack := p.draw(1.1, 1.3)
	both := p.r.IntN(2) == 0 // the new buffer is taken before the old is freed
	grow := p.draw(1.1, 1.6)
	sigma := p.draw(0.005, 0.02)
	keep := 5 + p.r.IntN(46)
	frames := p.draw(0.05, 0.25) * avail // a flush's worth of frames
	frame := frames / float64(keep)
	copies := 1.0
	if both {
		copies = 2
	}
	eq := p.draw(0.5, 0.9) * (avail - frames) / (copies * slack * (1 + 4*sigma))
	pairs0 := eq / grow
	tau := p.draw(60, 900)
	rebuild, every := p.draw(0.5, 3), p.draw(1, 10)
	capacity := pairs0 * slack
	p.add(capacity)
	t0, fluct, staged := p.t, 0.0, 0
	nextFrame := t0 + every
	end := t0 + p.draw(1500, 4800)
	for p.t < end {
		p.hold(rebuild * p.draw(0.8, 1.2))
		fluct = 0.9*fluct + sigma*math.Sqrt(1-0.81)*p.r.NormFloat64()
		need := (eq - (eq-pairs0)*math.Exp(-(p.t-t0)/tau)) * (1 + math.Max(-4*sigma, math.Min(4*sigma, fluct)))
		if need > capacity {
			if both {
				p.add(need * slack)
				p.hold(p.draw(0.05, 0.3))
				p.add(-capacity)
			} else {
				p.add(need*slack - capacity)
			}
			capacity = need * slack
		}
		if p.t < nextFrame {
			continue
		}
		p.add(frame)
		staged++
		nextFrame += every
		if staged >= keep {
			p.hold(p.draw(0.2, 2))
			p.add(-float64(staged) * frame)
			staged = 0
		}
	}
	return end
}

// s8LayerwiseQuantize: a post-training quantization Job that declares its
// length. Its calibration samples stay on the device; the full-precision
// model stays on the host, and one layer at a time is copied up, run on
// the calibration samples while its second-order statistics accumulate,
// quantized in a short burst of workspace, and kept on the device in its
// small quantized form while the rest is freed. The level is a row of
// layer-sized teeth over a base that climbs, layer by layer, for most of
// the run toward the quantized model's size, which fits; the last minutes
// pack the model and evaluate it.
func s8LayerwiseQuantize(p *s8Tape) float64 {
	planned := p.draw(1800, 7200)
	room := p.start()
	calib := p.draw(0.02, 0.08) * room
	p.add(calib)
	p.add(2 * calib * p.draw(0.5, 1)) // a layer's input and output
	avail := p.room()
	n := 24 + p.r.IntN(73)
	kept := p.draw(0.26, 0.34) // a quantized layer over its full size
	stats, ws := p.draw(0.1, 0.6), p.draw(0.2, 0.5)
	q := p.draw(0.3, 0.6) * avail // the quantized model
	layer := q / (float64(n) * kept)
	if w := q + layer*(1+stats+ws); w > 0.95*avail {
		layer *= 0.95 * avail / w
	}
	bps := p.draw(8e9, 24e9)
	per := (p.draw(0.8, 0.92)*planned - p.t) / float64(n)
	for range n {
		from := p.t
		b := layer * p.draw(0.8, 1)
		p.load(b, bps)
		p.add(stats * b)
		p.hold(0.6 * per * p.draw(0.9, 1.1))
		p.add(ws * b)
		p.hold(0.2 * per * p.draw(0.9, 1.1))
		p.add(-(ws + stats + 1 - kept) * b)
		p.hold(per - (p.t - from))
	}
	quantized := p.v
	pack := p.draw(0.1, 0.3) * q
	p.add(pack)
	p.hold(p.draw(5, 30))
	p.set(quantized)
	acts, step := p.draw(0.03, 0.1)*avail, p.draw(0.3, 2)
	for p.t < planned {
		p.tooth(quantized, acts*p.draw(0.9, 1), 0.5, step)
	}
	return planned
}

// s8BatchProbe: a training Job that declares its length and finds its batch
// size before it trains: it runs a few steps at a small batch, doubles the
// batch while its estimate of the next trial's peak stays under a budget
// of what it reads as free, then bisects between the last batch that ran
// and the first it would not try, and trains at the largest batch that
// ran. The trial peaks climb geometrically in the first minute, then close
// in on the budget, and the training repeats the last one for the rest of
// the run.
func s8BatchProbe(p *s8Tape) float64 {
	planned := p.draw(1800, 7200)
	room := p.start()
	w := p.copyUp(0.04, 0.15, room)
	p.add(3 * w) // gradients and two moments, taken by a dry run
	avail := p.room()
	budget := p.draw(0.7, 0.92) * avail
	unit := budget * p.draw(0.005, 0.03) // activations of the first batch
	base := p.v
	stepTop := p.draw(0.3, 3) * unit / budget // seconds a step of the first batch
	slope := unit
	trial := func(b float64) {
		slope = unit * p.draw(1, 1.04)
		for range 2 + p.r.IntN(4) {
			p.tooth(base, b*slope, 0.35, math.Max(0.1, stepTop*b))
		}
		p.hold(p.draw(0.5, 3))
	}
	b := 1.0
	for trial(b); 2*b*slope <= budget; b *= 2 {
		trial(2 * b)
	}
	lo, hi := b, 2*b
	for range 3 + p.r.IntN(4) {
		mid := (lo + hi) / 2
		if mid*slope > budget {
			hi = mid
			continue
		}
		trial(mid)
		lo = mid
	}
	for p.t < planned {
		p.tooth(base, lo*slope*p.draw(0.97, 1), 0.35, math.Max(0.1, stepTop*lo))
	}
	return planned
}

// s8Request is one request a serving shape decodes: the tokens its cache
// holds and those still to come.
type s8Request struct{ held, todo float64 }

// s8Decode gives each running request, in order, the tokens step draws
// for it (at most those it has to come), drops the requests that finished,
// and returns the rest with the tokens they hold together.
func s8Decode(running []s8Request, step func() float64) ([]s8Request, float64) {
	kept, total := running[:0], 0.0
	for _, r := range running {
		n := math.Min(r.todo, step())
		r.held, r.todo = r.held+n, r.todo-n
		if r.todo > 0 {
			kept = append(kept, r)
			total += r.held
		}
	}
	return kept, total
}
