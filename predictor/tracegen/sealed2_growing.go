package tracegen

import "math"

// The growing shapes of the second sealed set: each runs out of its
// instance, and must be marked before it does (at least 5 s ahead at the
// shim's rate; with a declared horizon, by a quarter of its way to the
// OOM). docs/predictor-sealed2.md says what each one follows.

// s2Segments raises the level, a whole number of seg-sized segments above
// base at a time, to cover alloc: a caching allocator asks the device for
// more only when what it holds no longer fits.
func (b *s2Build) s2Segments(base, alloc, seg float64) {
	if alloc > b.v {
		b.jump(base + math.Ceil((alloc-base)/seg)*seg)
	}
}

// s2SlowLeak: a training loop, flat once warm, that keeps a little of
// every step (a tensor still referenced from a history list); the cache
// grows a segment at a time until the instance is full, 5 to 25 minutes
// after the leak starts.
func s2SlowLeak(b *s2Build) float64 {
	room := b.start()
	b.rampTo(b.v+b.draw(0.3, 0.65)*room, b.draw(1, 3)*1e9)
	b.hold(b.draw(10, 90))
	base, t0 := b.v, b.now()
	rate := (b.cap - base) / b.draw(300, 1500)
	seg := math.Max(20e6, b.draw(0.0005, 0.004)*b.cap)
	step := b.draw(0.3, 3)
	b.growUntilOOM(func() {
		b.hold(step * b.draw(0.9, 1.1))
		b.s2Segments(base, base+rate*(b.now()-t0), seg)
	})
	return 0
}

// s2GrowthResumes: a warm-up that grows in a few steps and stops, a long
// flat phase (two to ten minutes), then growth again in irregular steps (a
// later phase of the job with larger inputs) until the OOM, one to five
// minutes later.
func s2GrowthResumes(b *s2Build) float64 {
	room := b.start()
	b.rampTo(b.v+b.draw(0.2, 0.4)*room, b.draw(1, 3)*1e9)
	b.hold(b.draw(3, 15))
	n := 3 + b.r.IntN(6)
	up := b.draw(0.05, 0.2) * room / float64(n)
	for range n {
		b.hold(b.draw(2, 15))
		b.jump(b.v + up*b.draw(0.7, 1.3))
	}
	b.hold(b.draw(120, 600))
	rate := (b.cap - b.v) / b.draw(60, 300)
	gap := b.draw(0.5, 4)
	b.growUntilOOM(func() {
		g := gap * (0.2 + 0.8*b.r.ExpFloat64())
		b.hold(g)
		b.jump(b.v + rate*g*b.draw(0.6, 1.4))
	})
	return 0
}

// s2LongContextKV: a long-context generation whose key-value cache grows
// with every token and is reallocated in steps of irregular size, larger as
// the cache grows, at irregular times, until the OOM 40 s to 400 s after
// the weights are in.
func s2LongContextKV(b *s2Build) float64 {
	room := b.start()
	b.rampTo(b.v+b.draw(0.25, 0.55)*room, b.draw(1, 4)*1e9)
	b.hold(b.draw(1, 20))
	base, left := b.v, b.cap-b.v
	steps := b.draw(25, 120)
	mean, gap := left/steps, b.draw(40, 400)/steps
	b.growUntilOOM(func() {
		b.hold(math.Max(0.1, gap*b.r.ExpFloat64()))
		grow := mean * (0.5 + (b.v-base)/left) * math.Exp(0.6*b.r.NormFloat64()-0.18)
		b.jump(b.v + grow)
	})
	return 0
}

// s2FastRamp: a model loaded, a short pause, then allocations a few tenths
// of a second apart that fill what is left in 15 s to 45 s.
func s2FastRamp(b *s2Build) float64 {
	room := b.start()
	b.rampTo(b.v+b.draw(0.2, 0.5)*room, b.draw(1, 4)*1e9)
	b.hold(b.draw(3, 30))
	base, t0 := b.v, b.now()
	rate := (b.cap - base) / b.draw(15, 45)
	b.growUntilOOM(func() {
		b.hold(b.draw(0.1, 0.5))
		b.jump(base + rate*(b.now()-t0))
	})
	return 0
}

// s2LeakHorizon: a training Job that declares its planned length (15 to 40
// minutes) and leaks steadily from its first steps, a segment at a time;
// it runs out at 35% to 90% of its planned length.
func s2LeakHorizon(b *s2Build) float64 {
	room := b.start()
	d := b.draw(900, 2400)
	oomAt := b.draw(0.35, 0.9) * d
	b.rampTo(b.v+b.draw(0.25, 0.55)*room, b.draw(1, 3)*1e9)
	b.hold(b.draw(5, 25))
	base, t0 := b.v, b.now()
	rate := (b.cap - base) / (oomAt - t0)
	seg := math.Max(2e6, b.draw(0.0005, 0.003)*b.cap)
	step := b.draw(0.5, 4)
	b.growUntilOOM(func() {
		b.hold(step * b.draw(0.9, 1.1))
		b.s2Segments(base, base+rate*(b.now()-t0), seg)
	})
	return d
}

// s2KVBatchHorizon: an offline generation Job that declares its planned
// length (10 to 30 minutes) and whose batches need more key-value cache as
// it goes (longer prompts later in its data), with noise from batch to
// batch; the cache keeps the largest need so far, so it rises in irregular
// steps at irregular times and runs out at 40% to 90% of the planned
// length.
func s2KVBatchHorizon(b *s2Build) float64 {
	room := b.start()
	d := b.draw(600, 1800)
	oomAt := b.draw(0.4, 0.9) * d
	b.rampTo(b.v+b.draw(0.2, 0.5)*room, b.draw(1, 4)*1e9)
	base, t0 := b.v, b.now()
	first := b.draw(0.02, 0.1) * room
	slope := (b.cap - base - first) / (oomAt - t0)
	noise, batch := b.draw(0.02, 0.08)*room, b.draw(1, 8)
	b.growUntilOOM(func() {
		b.hold(batch * b.draw(0.5, 1.5))
		if need := base + first + slope*(b.now()-t0) + noise*b.r.NormFloat64(); need > b.v {
			b.jump(need)
		}
	})
	return d
}
