package tracegen

import "math"

// The growing shapes of the eighth sealed set: each runs out of its
// instance and must be marked before it does (at least 5 s ahead at the
// shim's rate; with a declared horizon, by a quarter of its way to the
// OOM). Each sizes its growth from what is left once it is up, so that the
// instance fills near a drawn time, round, tile or step count;
// docs/predictor-sealed8.md says what each one follows.

// s8KernelRounds: a Bayesian-optimization service whose Gaussian-process
// surrogate lives on the device. Each round, a batch of new observations
// comes back and the n-by-n kernel matrix and its Cholesky factor are
// rebuilt beside the old pair, which is freed once the new one is done;
// then the acquisition step scores a pool of candidates against every
// observation. The level steps up every round by an amount that grows with
// n, under spikes twice its size, until a rebuild or a scoring does not
// fit.
func s8KernelRounds(p *s8Tape) float64 {
	room := p.start()
	p.add(p.draw(0.01, 0.05) * room) // the candidates' features
	entry := 8.0                     // double precision
	if p.r.IntN(2) == 0 {
		entry = 4
	}
	cands := p.draw(1000, 20000)
	// n at which the old pair, the new pair and a scoring fill what is
	// left: 4 entry n² + entry cands n = left.
	nTop := (-cands + math.Sqrt(cands*cands+16*p.left()/entry)) / 8
	rounds := 40 + p.r.IntN(161)
	n := nTop * p.draw(0.05, 0.2)
	k := (nTop - n) / (float64(rounds) - p.draw(0.1, 0.9))
	wait, flops := p.draw(3, 25), p.draw(2e12, 2e13)
	p.ramp(p.v+2*entry*n*n, p.draw(0.5, 3))
	for p.t < s8Limit {
		p.hold(1 + wait*p.r.ExpFloat64())
		nn := n + k*p.draw(0.8, 1.2)
		p.ramp(p.v+entry*nn*nn, p.draw(0.1, 1)) // the new kernel matrix
		if p.over() {
			return 0
		}
		p.hold(0.05 + nn*nn*nn/3/flops)
		p.add(entry * nn * nn) // its factor
		if p.over() {
			return 0
		}
		p.hold(p.draw(0.05, 0.3))
		p.add(-2 * entry * n * n)
		n = nn
		cross := entry * cands * n
		p.add(cross)
		if p.over() {
			return 0
		}
		p.hold(p.draw(0.5, 4))
		p.add(-cross)
	}
	return 0
}

// s8SceneTiles: a simulator that renders a large world for a moving agent
// (a robot in a digital twin, a cloud game) and streams the world's tiles
// onto the device as they come into view: each tile's textures are copied
// up, its geometry's acceleration structure is built with a scratch
// buffer and compacted. The residency budget was set above what the
// instance holds, so no tile is ever evicted. The agent travels in spells
// and stands still between them; a tile seen before costs nothing. The
// level climbs in bursts of tile loads while the agent moves, flat while
// it stands, until a tile does not fit.
func s8SceneTiles(p *s8Tape) float64 {
	room := p.start()
	p.copyUp(0.05, 0.15, room)       // shaders, the scene's shared assets
	p.add(p.draw(0.02, 0.06) * room) // render targets
	tiles := 150 + p.r.IntN(451)     // tiles of median size that fill what is left
	median := p.left() / float64(tiles)
	sigma := p.draw(0.3, 0.8)
	radius := 1 + p.r.IntN(2)
	straight := p.draw(0.6, 0.95)
	moveGap, moves, dwell := p.draw(1, 6), p.draw(5, 40), p.draw(10, 180)
	bps := p.draw(1e9, 4e9)
	seen := map[[2]int]bool{}
	x, y, dx, dy := 0, 0, 1, 0
	view := func() bool { // loads every tile in view not loaded yet; true at the OOM
		for i := -radius; i <= radius; i++ {
			for j := -radius; j <= radius; j++ {
				if seen[[2]int{x + i, y + j}] {
					continue
				}
				seen[[2]int{x + i, y + j}] = true
				tile := median * p.lognormal(sigma)
				geo := tile * p.draw(0.2, 0.5)
				p.load(tile-geo, bps)
				if p.over() {
					return true
				}
				scratch := geo * p.draw(0.3, 0.8)
				p.add(geo + scratch)
				if p.over() {
					return true
				}
				p.hold(p.draw(0.1, 0.5))
				p.add(-scratch - geo*p.draw(0.3, 0.6))
			}
		}
		return false
	}
	if view() {
		return 0
	}
	for p.t < s8Limit {
		for range int(math.Ceil(moves * p.r.ExpFloat64())) {
			p.hold(moveGap * p.draw(0.7, 1.3))
			if p.r.Float64() > straight {
				dx, dy = -dy, dx
				if p.r.IntN(2) == 0 {
					dx, dy = -dx, -dy
				}
			}
			x, y = x+dx, y+dy
			if view() {
				return 0
			}
		}
		p.hold(dwell * p.r.ExpFloat64())
	}
	return 0
}

// s8UndetachedState: a recurrent model trained on long streams in chunks,
// whose hidden state is carried from chunk to chunk without being
// detached from the graph. Every chunk's saved tensors stay linked to the
// next, so each step keeps a little more, and each backward pass walks back
// through every chunk so far, so steps take longer and longer. Under the
// training sawtooth the level climbs by the same amount a step, ever more
// slowly in time, until a forward pass does not fit.
func s8UndetachedState(p *s8Tape) float64 {
	room := p.start()
	w := p.copyUp(0.05, 0.2, room)
	p.add(3 * w) // gradients and two moments
	acts := p.draw(0.1, 0.3) * p.left()
	steps := 150 + p.r.IntN(1051)
	keep := (p.left() - acts) / (float64(steps) - p.draw(0.1, 0.9))
	total, slowest := p.draw(900, 7200), p.draw(3, 15)
	first := total / (float64(steps) * (1 + slowest) / 2)
	more := first * (slowest - 1) / float64(steps)
	for i := 0; p.t < s8Limit; i++ {
		sec := (first + more*float64(i)) * p.draw(0.95, 1.05)
		base := p.v
		p.ramp(base+acts*p.draw(0.95, 1.05), 0.3*sec)
		if p.over() {
			return 0
		}
		p.ramp(base+keep, 0.7*sec)
	}
	return 0
}

// s8Overload: a serving process with no admission control by memory: it
// takes every request at once and decodes all running requests together,
// each step slower the more run. For a while the traffic is below what it
// can serve and the level wanders around a steady mean; then the traffic
// rises a little past its throughput, requests finish more slowly than
// they come, and the running set, each holding its growing cache, swells
// until a step does not fit.
func s8Overload(p *s8Tape) float64 {
	room := p.start()
	p.copyUp(0.15, 0.4, room)
	p.hold(p.draw(5, 40))
	base, avail := p.v, p.left()
	prompt, out := p.draw(100, 1000), p.draw(100, 600)
	step0 := p.draw(0.015, 0.04) // a decoding step's fixed seconds
	load0 := p.draw(0.2, 0.6)    // the traffic over the throughput, before
	running0 := p.draw(16, 64)   // requests running then, on average
	stepEach := step0 * load0 / (running0 * (1 - load0))
	perTok := p.draw(0.1, 0.25) * avail / (running0 * (prompt + out/2))
	rate0 := load0 / (stepEach * out)
	rate1 := p.draw(1.03, 1.25) / (stepEach * out)
	surge := p.t + p.draw(300, 2400)
	var running []s8Request
	dt := 0.5
	next := p.t + p.r.ExpFloat64()/rate0
	for p.t < s8Limit {
		rate := rate0
		if p.t >= surge {
			rate = rate1
		}
		for ; next < p.t+dt; next += p.r.ExpFloat64() / rate {
			running = append(running, s8Request{held: prompt * p.lognormal(0.7), todo: out * p.lognormal(0.5)})
		}
		tokens := dt / (step0 + stepEach*float64(len(running)))
		var total float64
		running, total = s8Decode(running, func() float64 { return tokens })
		p.ramp(base+total*perTok, dt)
		if p.over() {
			return 0
		}
	}
	return 0
}

// s8MeshRefine: an adaptive-mesh simulation Job that declares its end time.
// Every so often it regrids: the fine levels are rebuilt where the
// solution now has features (fronts, vortices), beside the old ones so
// that the fields can be interpolated across, and the old levels are then
// freed. As the features multiply, the fine levels grow; between regrids
// each step's flux buffers make small teeth. The level steps at every
// regrid, with a spike of both hierarchies, until a regrid's two copies do
// not fit.
func s8MeshRefine(p *s8Tape) float64 {
	planned := p.draw(1800, 7200)
	room := p.start()
	p.copyUp(0.08, 0.25, room) // the coarse grid, its fields, the solver's workspace
	top := p.left() / 2 * p.draw(1.01, 1.04)
	fine := top * p.draw(0.08, 0.3)
	t0, oom := p.t, p.draw(0.3, 0.75)*planned
	power := p.draw(0.7, 2)
	levels := 2 + p.r.IntN(4)
	regrid, step, flux := p.draw(5, 60), p.draw(0.2, 2), p.draw(0.02, 0.08)
	first := fine
	want := func(t float64) float64 {
		return first + (top-first)*math.Pow(math.Max(0, (t-t0)/(oom-t0)), power)
	}
	p.ramp(p.v+fine, p.draw(1, 5))
	next := p.t + regrid
	for p.t < s8Limit {
		for base := p.v; p.t < next; {
			if p.tooth(base, flux*fine, 0.6, step*p.draw(0.9, 1.1)) {
				return planned
			}
		}
		nf := want(p.t) * p.draw(0.97, 1.03)
		for range levels {
			p.add(nf / float64(levels))
			if p.over() {
				return planned
			}
			p.hold(p.draw(0.05, 0.4))
		}
		p.hold(p.draw(0.2, 2))
		p.add(-fine)
		fine = nf
		next = p.t + regrid*p.draw(0.8, 1.2)
	}
	return planned
}

// s8MetricState: a training Job that declares its length and validates
// every so often with a ranking metric that keeps every prediction and
// target on the device until it is computed. The metric is never reset
// (its reset sits at an epoch's end the loop never reaches), so each
// validation adds its outputs to those of every validation before, in a
// climb over the validation pass, and computing the metric sorts all it
// holds, with a copy of it beside. Flat training between; the spikes grow
// with every validation until one does not fit.
func s8MetricState(p *s8Tape) float64 {
	planned := p.draw(2400, 9000)
	room := p.start()
	w := p.copyUp(0.04, 0.15, room)
	p.add(3 * w) // gradients and two moments
	base, left := p.v, p.left()
	tacts := p.draw(0.1, 0.3) * left
	vals := 3 + p.r.IntN(10) // the validation whose sort does not fit
	sortCopy := p.draw(0.6, 1.5)
	each := left / ((float64(vals) - p.draw(0.1, 0.8)) * (1 + sortCopy))
	vacts := p.draw(0.02, 0.06) * left
	t0 := p.t
	every := (p.draw(0.3, 0.75)*planned - t0) / float64(vals)
	vlen := math.Min(0.5*every, p.draw(20, 200))
	vstep := p.draw(0.2, 1)
	batches := int(math.Max(1, vlen/vstep))
	step := p.draw(0.3, 2)
	stored := 0.0
	for k := 1; p.t < s8Limit; k++ {
		for p.t < t0+float64(k)*every-vlen {
			if p.tooth(base+stored, tacts*p.draw(0.95, 1.05), 0.35, step) {
				return planned
			}
		}
		for range batches {
			p.add(vacts)
			if p.over() {
				return planned
			}
			p.hold(0.6 * vstep)
			p.add(-vacts + each/float64(batches))
			p.hold(0.4 * vstep)
		}
		stored += each
		p.add(sortCopy * stored)
		if p.over() {
			return planned
		}
		p.hold(p.draw(1, 5))
		p.add(-sortCopy * stored)
	}
	return planned
}
