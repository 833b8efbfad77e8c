package tracegen

import "math"

// The quiet shapes of the second sealed set: each levels off under its
// instance and must never be marked. Levels are shares of room, what the
// instance has free once the CUDA context is up; docs/predictor-sealed2.md
// says what each one follows.

// s2PreallocFlat: a framework that reserves a large share of the free
// memory in one go when it first touches the device, then works inside
// that pool; a few library handles and workspaces come on top.
func s2PreallocFlat(b *s2Build) float64 {
	room := b.start()
	b.hold(b.draw(1, 12))
	b.jump(b.v + b.draw(0.70, 0.92)*room)
	for n := b.r.IntN(4); n > 0; n-- {
		b.hold(b.draw(0.3, 6))
		b.jump(b.v + b.draw(4e6, 40e6))
	}
	return b.draw(240, 900)
}

// s2PoolDoubling: a growth-on-demand allocator that extends its pool by a
// region twice the size of the last one whenever the warm-up needs more,
// three to six times, and never again.
func s2PoolDoubling(b *s2Build) float64 {
	room := b.start()
	b.hold(b.draw(1, 8))
	n := 3 + b.r.IntN(4)
	region := b.draw(0.45, 0.88) * room / (math.Pow(2, float64(n+1)) - 1)
	b.jump(b.v + region)
	for range n {
		b.hold(b.draw(0.4, 10))
		region *= 2
		b.jump(b.v + region)
	}
	return b.draw(300, 900)
}

// s2ModelRepository: an inference server loading two to five models one
// after another, each read from storage at its own speed, then run once
// (a warm-up whose workspace is freed but for a small cache), with pauses
// between models.
func s2ModelRepository(b *s2Build) float64 {
	room := b.start()
	all := b.draw(0.35, 0.72) * room
	for _, w := range b.gaps(2 + b.r.IntN(4)) {
		b.hold(b.draw(1, 40))
		b.rampTo(b.v+w*all, b.draw(0.3, 2.5)*1e9)
		kept := b.v + b.draw(0.005, 0.02)*room
		b.jump(b.v + b.draw(0.02, 0.08)*room)
		b.hold(b.draw(0.3, 3))
		b.jump(kept)
	}
	return b.draw(300, 900)
}

// s2EngineBuild: an inference engine built on the node: the network's
// weights copied up, then 8 to 40 candidate kernels timed one after
// another, each with a temporary workspace up to the builder's limit; the
// builder is freed, the built engine loaded and its activation memory
// reserved, then it serves.
func s2EngineBuild(b *s2Build) float64 {
	room := b.start()
	b.hold(b.draw(0.5, 4))
	w := b.draw(0.08, 0.3) * room
	b.rampTo(b.v+w, b.draw(1, 4)*1e9)
	base, limit := b.v, b.draw(0.3, 0.55)*room
	for n := 8 + b.r.IntN(33); n > 0; n-- {
		b.hold(b.draw(0.1, 1.2))
		b.jump(base + b.draw(0.05, 1)*limit)
		b.hold(b.draw(0.1, 1.5))
		b.jump(base)
	}
	b.hold(b.draw(0.2, 2))
	b.jump(base - w + b.draw(0.01, 0.05)*room)
	b.hold(b.draw(0.5, 5))
	b.rampTo(b.v+w*b.draw(0.8, 1.1), b.draw(1, 4)*1e9)
	b.jump(b.v + b.draw(0.02, 0.1)*room)
	return b.draw(300, 900)
}

// s2CacheFlush: a caching allocator serving requests of varying batch and
// sequence sizes: what it reserves is the largest request's need so far,
// so it rises in irregular steps that grow rarer, under a ceiling set by
// the largest request the server admits; now and then the server empties
// the cache between requests and the rise starts again.
func s2CacheFlush(b *s2Build) float64 {
	room := b.start()
	w := b.draw(0.15, 0.45) * room
	b.rampTo(b.v+w, b.draw(0.8, 3)*1e9)
	base := b.v
	ceiling := b.draw(0.25, 1) * (0.9*room - w) / 1.1
	skew := b.draw(0.5, 3)
	every := b.draw(40, 200)
	flush := b.now() + every*b.draw(0.5, 1.5)
	d := b.draw(400, 1200)
	reserved := 0.0
	for b.now() < d {
		b.hold(b.draw(0.05, 0.6))
		need := math.Ceil(ceiling*math.Pow(b.r.Float64(), skew)*b.draw(1, 1.1)/2e6) * 2e6
		if need > reserved {
			reserved = need
			b.jump(base + reserved)
		}
		if b.now() >= flush {
			reserved = 0
			b.jump(base)
			flush = b.now() + every*b.draw(0.5, 1.5)
		}
	}
	return d
}

// s2LoaderBuffers: training whose reserved memory is flat after its
// warm-up, fed by a data pipeline that keeps two to six batches on the
// device; a buffer is reallocated, with some headroom, when a batch larger
// than it arrives, up to the pipeline's largest buffer, so the pipeline's
// memory grows in steps that grow rarer and stop at its cap.
func s2LoaderBuffers(b *s2Build) float64 {
	room := b.start()
	b.rampTo(b.v+b.draw(0.3, 0.6)*room, b.draw(1, 3)*1e9)
	depth := 2 + b.r.IntN(5)
	bufCap := b.draw(0.02, 0.25) * room / float64(depth)
	bufs := make([]float64, depth)
	period, spread := b.draw(0.15, 1.5), b.draw(0.2, 0.8)
	median, headroom := bufCap*b.draw(0.25, 0.6), b.draw(1, 1.5)
	d := b.draw(600, 1500)
	for i := 0; b.now() < d; i++ {
		b.hold(period * b.draw(0.8, 1.2))
		size := math.Min(median*math.Exp(spread*b.r.NormFloat64()), bufCap)
		if k := i % depth; size > bufs[k] {
			grown := math.Min(size*headroom, bufCap)
			b.jump(b.v + grown - bufs[k])
			bufs[k] = grown
		}
	}
	return d
}

// s2TrainWarmup: a training Job that declares its planned length. Its
// weights are copied up; the first step reserves the activations over the
// forward pass and the gradients after the backward pass, the first
// optimiser step its two moment buffers per weight, the second step a
// little more as the cache settles, the first evaluation its own buffers;
// the cache is reused from then on, so the memory is flat to the end.
func s2TrainWarmup(b *s2Build) float64 {
	room := b.start()
	d := b.draw(900, 2400)
	params := b.draw(0.03, 0.08) * room
	b.rampTo(b.v+params, b.draw(1, 3)*1e9)
	b.hold(b.draw(2, 20))
	step := b.draw(0.3, 3)
	act := b.draw(0.15, 0.4) * room
	b.rampTo(b.v+act, act/(0.4*step))
	b.jump(b.v + params)
	b.hold(0.2 * step)
	b.jump(b.v + 2*params)
	b.hold(0.4 * step)
	b.jump(b.v + b.draw(0, 0.08)*room)
	b.hold(b.draw(60, 600))
	b.jump(b.v + b.draw(0.01, 0.05)*room)
	return d
}
