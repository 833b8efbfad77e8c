package tracegen

import "math"

// The growing shapes of the seventh sealed set: each runs out of its
// instance and must be marked before it does (at least 5 s ahead at the
// shim's rate; with a declared horizon, by a quarter of its way to the
// OOM). Each sizes its growth from what is left once it is up, so that the
// instance fills near a drawn time or a drawn number of steps;
// docs/predictor-sealed7.md says what each one follows.

// s7HookPileup: a training loop that registers a forward hook inside its
// step loop instead of once, each hook keeping the feature map it sees in
// a list for later inspection. Step n has n hooks, so it keeps n more
// maps: what is kept grows with the square of the steps, under a sawtooth
// of activations far larger than a step's share, until a forward pass
// does not fit.
func s7HookPileup(l *s7Line) float64 {
	w := l.weights(0.05, 0.2, l.start())
	step := l.draw(0.3, 3)
	acts := l.draw(0.2, 0.5) * (l.left() - 3*w)
	l.firstStep(acts, w, step)
	steps := l.draw(600, 3600) / step // steps until the pile and a forward pass fill the instance
	each := 2 * (l.left() - acts) / (steps * (steps + 1))
	for i := 1; !l.over() && l.t < s7Limit; i++ {
		kept := each * float64(i) * l.draw(0.9, 1.1)
		if l.step(l.v, acts*l.draw(1, 1.05)+kept, kept, step*l.draw(0.95, 1.05)) {
			break
		}
	}
	return 0
}

// s7CommunicatorChurn: a distributed job that creates a new communication
// group every time a helper is called (for an evaluation, a metric, a
// barrier) and never destroys it. Each new group sets up its channels'
// buffers on the device, tens to hundreds of MB, so under the training
// sawtooth the level climbs by the same step at a steady pace, slowly,
// until a forward pass does not fit.
func s7CommunicatorChurn(l *s7Line) float64 {
	w := l.weights(0.05, 0.2, l.start())
	step := l.draw(0.3, 2)
	acts := l.draw(0.1, 0.3) * (l.left() - 3*w)
	l.firstStep(acts, w, step)
	n := 40 + l.r.IntN(261)
	each := (l.left() - acts) / (float64(n) - l.draw(0.1, 0.9))
	period := l.draw(1200, 9000) / float64(n)
	next := l.t + l.vary(period, 0.3)
	for !l.over() && l.t < s7Limit {
		if l.step(l.v, acts*l.draw(1, 1.05), 0, step*l.draw(0.95, 1.05)) {
			break
		}
		if l.t >= next {
			l.glide(l.v+each, l.draw(0.1, 0.5))
			next = l.t + l.vary(period, 0.3)
		}
	}
	return 0
}

// s7NotebookTenants: one device shared by a team's notebooks. Users come
// at random, often a few at once, each starting a kernel that takes a CUDA
// context and loads a model or a dataset, runs cells that briefly need
// more, and is then left idle holding all it took. Now and then someone
// shuts a kernel down. The level climbs in uneven, bursty steps until a
// kernel's load or a cell does not fit.
func s7NotebookTenants(l *s7Line) float64 {
	l.start()
	m := 4 + l.r.IntN(9) // kernels of median size that fill the device
	median := l.left() / (float64(m) + l.draw(0.1, 0.6))
	gap := l.draw(1200, 5400) / float64(m)
	var kernels []float64
	for !l.over() && l.t < s7Limit {
		for range 1 + l.r.IntN(3) {
			k := math.Min(0.6*l.size, median*l.spread(0.4))
			l.add(math.Min(l.draw(0.25e9, 0.5e9), 0.05*l.size))
			l.load(k, l.draw(0.5e9, 2e9))
			if l.over() {
				return 0
			}
			kernels = append(kernels, k)
			for range l.r.IntN(4) {
				l.wait(l.draw(5, 90))
				cell := k * l.draw(0.05, 0.3)
				l.glide(l.v+cell, l.draw(0.5, 5))
				if l.over() {
					return 0
				}
				l.add(-cell)
			}
		}
		if len(kernels) > 1 && l.r.Float64() < 0.15 {
			i := l.r.IntN(len(kernels))
			l.add(-kernels[i])
			kernels = append(kernels[:i], kernels[i+1:]...)
		}
		l.wait(gap * l.r.ExpFloat64())
	}
	return 0
}

// s7AdapterGraphPools: a serving engine for many fine-tuned adapters of one
// base model that replays captured CUDA graphs. Swapping an adapter into a
// slot makes it capture its graphs again; the old graphs stay referenced,
// and their private memory pools with them. Swaps come in bursts as
// tenants come online, so the level climbs by a pool's worth per swap,
// several in a row and then none for a while, until a capture does not
// fit.
func s7AdapterGraphPools(l *s7Line) float64 {
	room := l.start()
	l.weights(0.15, 0.35, room)
	l.add(l.draw(0.2, 0.35) * room)
	l.add(l.draw(0.02, 0.05) * room)
	slots := 4 + l.r.IntN(13)
	adapter := math.Min(l.draw(10e6, 150e6), 0.01*room)
	n := 25 + l.r.IntN(176)
	pool := (l.left() - float64(slots)*adapter) / (float64(n) - l.draw(0.1, 0.9))
	rate := float64(n) / l.draw(900, 5400) // swaps a second
	filled := 0
	for !l.over() && l.t < s7Limit {
		burst := 1 + l.r.IntN(6)
		l.wait(float64(burst) / rate * l.r.ExpFloat64())
		for range burst {
			if filled < slots {
				l.load(adapter, l.draw(0.5e9, 2e9))
				filled++
			}
			l.wait(l.draw(0.05, 0.3))
			l.glide(l.v+pool, l.draw(0.2, 1.5))
			if l.over() {
				return 0
			}
			l.wait(l.draw(0.5, 5))
		}
	}
	return 0
}

// s7ProgressiveResize: a training Job that declares its length and trains
// on images of growing resolution, stage by stage (small images first for
// speed, full size at the end). Activations grow with the pixels, and
// steps take longer; the schedule's later stages were never tried on this
// instance, and the first that does not fit ends the run.
func s7ProgressiveResize(l *s7Line) float64 {
	planned := l.draw(1800, 7200)
	w := l.weights(0.05, 0.2, l.start())
	step := l.draw(0.3, 2)
	stages := 5 + l.r.IntN(6)
	grow := l.draw(0.08, 0.25) // each stage's side over the first's
	area := func(s int) float64 { return math.Pow(1+grow*float64(s), 2) }
	first := 3 + l.r.IntN(stages-2) // the first stage that cannot fit
	a0 := l.draw(1.01, 1.06) * (l.left() - 3*w) / area(first)
	l.firstStep(a0, w, step)
	t0 := l.t
	last := l.draw(0.5, 0.85) * planned // when the last stage starts
	for s := 0; s <= stages && l.t < s7Limit; s++ {
		until := t0 + float64(s+1)*(last-t0)/float64(stages)
		for base := l.v; l.t < until; {
			if l.step(base, a0*area(s)*l.draw(1, 1.03), 0, step*area(s)) {
				return planned
			}
		}
	}
	return planned
}

// s7RolloutLength: a reinforcement-learning Job that declares its length
// and alternates rollouts, where the policy generates answers to a batch
// of prompts, with updates. As the policy learns, its answers grow longer,
// and the rollout's key-value cache with them; the cap on answer length
// was set higher than the instance allows. Under a deep sawtooth (a
// rollout's cache, then the update's activations) the rollout peaks climb
// until one does not fit.
func s7RolloutLength(l *s7Line) float64 {
	planned := l.draw(2400, 9000)
	room := l.start()
	w := l.draw(0.04, 0.1) * room
	l.load(2*w, l.draw(1e9, 3e9)) // the policy and a frozen reference
	acts := l.draw(0.1, 0.25) * (l.left() - 3*w)
	update := l.draw(0.5, 2)
	l.firstStep(acts, w, update)
	base := l.v
	top := l.left() * l.draw(1.02, 1.05)
	kv0 := l.draw(0.25, 0.55) * top
	t0, oom := l.t, l.draw(0.3, 0.7)*planned
	gen0 := l.draw(20, 100)
	for !l.over() && l.t < s7Limit {
		kv := (kv0 + (top-kv0)*math.Min(1, (l.t-t0)/(oom-t0))) * l.spread(0.05)
		l.add(kv * l.draw(0.05, 0.15))
		l.glide(base+kv, gen0*(0.7+0.3*kv/kv0)*l.draw(0.9, 1.1))
		if l.over() {
			break
		}
		l.wait(l.draw(0.2, 2))
		l.jump(base)
		for range 2 + l.r.IntN(7) {
			if l.step(base, acts*l.draw(0.95, 1.05), 0, update) {
				return planned
			}
		}
	}
	return planned
}
