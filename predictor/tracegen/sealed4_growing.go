package tracegen

import "math"

// The growing shapes of the fourth sealed set: each runs out of its
// instance and must be marked before it does (at least 5 s ahead at the
// shim's rate; with a declared horizon, by a quarter of its way to the
// OOM). Each writes its growth as an s4Growth in its own units, scaled so
// that the instance fills about a drawn time after the growth starts;
// docs/predictor-sealed4.md says what each one follows.

// s4Chunk is how finely a growing shape's allocations reach the device:
// 2 MiB, or 0.1% to 0.5% of the instance when that is larger.
func (p *s4Tape) s4Chunk() float64 {
	return math.Max(2<<20, p.draw(0.001, 0.005)*p.size)
}

// s4Left is what remains before the instance is full.
func (p *s4Tape) s4Left() float64 { return p.size - p.floor - p.level }

// s4RequestTypeLeak: a server that leaks only when it serves one rare kind
// of request; those come in small clusters with long flat gaps between.
func s4RequestTypeLeak(p *s4Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.2, 0.5)*room, p.draw(1e9, 4e9))
	p.to(p.level + p.draw(0.03, 0.12)*room)
	p.stay(p.draw(10, 90))
	t0, ttl, gap := p.now(), p.draw(600, 3600), p.draw(20, 300)
	var g s4Growth
	for t := t0 + gap*p.r.ExpFloat64(); t < t0+3*ttl; t += gap * p.r.ExpFloat64() {
		for range 1 + p.r.IntN(5) {
			t += p.draw(0.2, 4)
			g.add(t, math.Exp(0.6*p.r.NormFloat64()))
		}
	}
	p.play(g, g.bytesPerUnit(t0+ttl, p.s4Left()), p.s4Chunk())
	return 0
}

// s4IDCache: a recommender that caches an embedding row on the device for
// every new ID it meets and never evicts; new IDs thin out as the common
// ones are cached, so the growth slows but does not stop.
func s4IDCache(p *s4Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.15, 0.45)*room, p.draw(1e9, 3e9))
	p.stay(p.draw(5, 60))
	t0, ttl := p.now(), p.draw(300, 2400)
	step, decay, tau := p.draw(0.5, 3), p.draw(0, 0.5), p.draw(30, 300)
	var g s4Growth
	for t := t0 + step; t < t0+3*ttl; t += p.jitter(step, 0.2) {
		g.add(t, math.Pow((t-t0+tau)/tau, -decay)*math.Exp(0.3*p.r.NormFloat64()))
	}
	p.play(g, g.bytesPerUnit(t0+ttl, p.s4Left()), p.draw(8e6, 64e6))
	return 0
}

// s4IndexIngest: a retrieval service whose vector index lives on the
// device and grows with every ingested batch of documents; batches arrive
// minutes apart and each is added over some seconds.
func s4IndexIngest(p *s4Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.1, 0.35)*room, p.draw(1e9, 3e9))
	p.to(p.level + p.draw(0.02, 0.08)*room)
	p.stay(p.draw(10, 120))
	t0, ttl, gap := p.now(), p.draw(900, 3600), p.draw(30, 300)
	var g s4Growth
	for t := t0 + gap*p.r.ExpFloat64(); t < t0+3*ttl; t += gap * p.r.ExpFloat64() {
		size, parts, span := math.Exp(0.7*p.r.NormFloat64()), 5+p.r.IntN(36), p.draw(2, 20)
		for i := range parts {
			g.add(t+span*float64(i)/float64(parts), size/float64(parts))
		}
		t += span
	}
	p.play(g, g.bytesPerUnit(t0+ttl, p.s4Left()), p.s4Chunk())
	return 0
}

// s4FragmentationCreep: a long-running server whose allocator, serving
// requests of ever-changing sizes, cannot reuse its freed blocks well and
// reserves a little more now and then, in small irregular steps, giving a
// block back only sometimes.
func s4FragmentationCreep(p *s4Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.2, 0.5)*room, p.draw(1e9, 4e9))
	for range 2 + p.r.IntN(5) {
		p.to(p.level + p.draw(0.01, 0.05)*room)
		p.stay(p.draw(0.5, 5))
	}
	p.stay(p.draw(30, 300))
	t0, ttl, gap, back := p.now(), p.draw(1200, 3600), p.draw(5, 60), p.draw(0.1, 0.3)
	var g s4Growth
	for t := t0 + gap*p.r.ExpFloat64(); t < t0+3*ttl; t += gap * p.r.ExpFloat64() {
		u := math.Exp(p.r.NormFloat64())
		if p.r.Float64() < back {
			u = -p.draw(0.3, 0.8)
		}
		g.add(t, u)
	}
	p.play(g, g.bytesPerUnit(t0+ttl, p.s4Left()), p.draw(2<<20, 20<<20))
	return 0
}

// s4ReplayBuffer: a reinforcement learning Job that declares its length
// and keeps its replay buffer on the device, appending every rollout's
// transitions; it was sized for more than the instance holds. Between
// rollouts an update holds its activations for a few seconds.
func s4ReplayBuffer(p *s4Tape) float64 {
	planned := p.draw(900, 3600)
	room := p.start()
	p.copyIn(p.draw(0.03, 0.1)*room, p.draw(1e9, 3e9))
	p.stay(p.draw(2, 20))
	t0 := p.now()
	full := p.draw(0.3, 0.85) * planned
	period, act := p.draw(5, 40), p.draw(0.03, 0.1)*room
	var g s4Growth
	for t := t0 + period; t < t0+3*full; t += p.jitter(period, 0.2) {
		g.add(t, p.jitter(1, 0.2))
	}
	scale := g.bytesPerUnit(full, p.s4Left()-act)
	base, held := p.level, 0.0
	for i, t := range g.at {
		if p.over() || p.now() > s4Limit {
			break
		}
		p.stay(t - p.now())
		held += g.units[i] * scale
		p.to(base + held)
		upd := p.jitter(act, 0.1)
		p.stay(p.draw(0.5, 2))
		p.to(base + held + upd)
		if p.over() {
			break
		}
		p.stay(p.draw(1, 5))
		p.to(base + held)
	}
	return planned
}

// s4ProfilerBuffer: a training Job that declares its length with a
// profiler left on that records every step's events into a device buffer
// it never flushes. When the buffer is full it allocates a larger one,
// copies, and frees the old, so the level climbs in widening steps with a
// short spike (both buffers) at each.
func s4ProfilerBuffer(p *s4Tape) float64 {
	planned := p.draw(600, 3000)
	room := p.start()
	p.copyIn(p.draw(0.15, 0.35)*room, p.draw(1e9, 4e9))
	p.glide(p.level+p.draw(0.1, 0.3)*room, p.draw(0.5, 3))
	p.stay(p.draw(2, 20))
	t0, full := p.now(), p.draw(0.3, 0.85)*planned
	step, factor := p.draw(0.3, 3), p.draw(1.5, 2)
	// In units of one step's events: the buffer starts with room for
	// 5-50 steps and grows by factor whenever the next step would not fit.
	type grow struct{ t, old, next float64 }
	var gs []grow
	size, content := p.draw(5, 50), 0.0
	for t := t0 + step; t < t0+3*full; t += p.jitter(step, 0.1) {
		content++
		if content > size {
			gs = append(gs, grow{t, size, size * factor})
			size *= factor
		}
	}
	// Scaled so that the last spike due by full (or the first, when none
	// is) is 2% over what is left.
	peak := gs[0].old + gs[0].next
	for _, x := range gs {
		if x.t <= t0+full {
			peak = x.old + x.next
		}
	}
	scale := 1.02 * p.s4Left() / peak
	base := p.level
	p.to(base + gs[0].old*scale)
	for _, x := range gs {
		if p.over() || p.now() > s4Limit {
			break
		}
		p.stay(x.t - p.now())
		p.glide(base+(x.old+x.next)*scale, p.draw(0.05, 0.3))
		if p.over() {
			break
		}
		p.stay(p.draw(0.1, 1))
		p.to(base + x.next*scale)
	}
	return planned
}
