package tracegen

import (
	"math"
	"sort"
)

// The quiet shapes of the seventh sealed set: each stays under 90% of its
// instance, every transient allocation in, for its whole planned length
// and must never be marked. docs/predictor-sealed7.md says what each one
// follows.

// s7KVPreemptCap: a serving engine that takes key-value cache blocks from
// the device as sequences need them, up to a cap. Requests come at random;
// each brings its prompt's blocks at once and adds one token's worth per
// decoded token until it finishes and gives all back. When the cache would
// pass its cap, the newest running sequences are preempted: their blocks
// are freed and they wait to be computed again. Under heavy traffic the
// level climbs to the cap and hovers there, dipping at each preemption.
func s7KVPreemptCap(l *s7Line) float64 {
	room := l.start()
	l.load(l.draw(0.15, 0.4)*room, l.draw(1e9, 4e9))
	l.add(l.draw(0.01, 0.04) * room)
	l.wait(l.draw(5, 60))
	base := l.v
	limit := l.draw(0.8, 1) * l.room()
	prompt, out := l.draw(200, 2000), l.draw(100, 800)
	stars := l.draw(8, 64) // sequences of median length that fill the cap
	perTok := limit / (stars * (prompt + out))
	block := 16 * perTok
	tps := l.draw(15, 50)
	rate := l.draw(0.5, 1.8) * stars / (out / tps)
	type seq struct{ held, todo float64 }
	var running, waiting []seq
	bytes := func(s seq) float64 { return blocks(s.held*perTok, block) }
	dt := 0.5
	end := l.t + l.draw(1800, 5400)
	next := l.t + l.r.ExpFloat64()/rate
	for l.t < end {
		for ; next < l.t+dt; next += l.r.ExpFloat64() / rate {
			waiting = append(waiting, seq{held: math.Min(3*prompt, prompt*l.spread(0.8)), todo: math.Min(3*out, out*l.spread(0.6))})
		}
		total := 0.0
		for _, s := range running {
			total += bytes(s)
		}
		for len(waiting) > 0 && total+bytes(waiting[0]) <= limit {
			total += bytes(waiting[0])
			running, waiting = append(running, waiting[0]), waiting[1:]
		}
		kept := running[:0]
		total = 0
		for _, s := range running {
			n := math.Min(s.todo, tps*dt*l.draw(0.7, 1.3))
			s.held, s.todo = s.held+n, s.todo-n
			if s.todo > 0 {
				kept = append(kept, s)
				total += bytes(s)
			}
		}
		running = kept
		for total > limit && len(running) > 1 {
			s := running[len(running)-1]
			running = running[:len(running)-1]
			waiting = append([]seq{s}, waiting...)
			total -= bytes(s)
		}
		l.glide(base+total, dt)
	}
	return end
}

// s7AccumFirstStep: training with gradient accumulation. Each micro-batch
// builds its activations over the forward pass and frees them over the
// backward pass; the gradient buffers appear during the first backward
// pass, and the optimizer's state (two moments, and in mixed precision a
// full-precision master copy of the weights) only at the first optimizer
// step, after all the micro-batches of the first step, minutes in when
// they are many and slow. In half the runs the gradients are released
// after every step and taken again in the next backward pass.
func s7AccumFirstStep(l *s7Line) float64 {
	room := l.start()
	grads, state := 1.0, 2.0
	if l.r.IntN(2) == 0 { // half-precision weights: the state is kept in full precision
		state = 6
	}
	acts := l.draw(0.3, 2.5)
	w := l.draw(0.55, 0.95) * room / (1 + grads + state + 1.1*acts)
	l.load(w, l.draw(1e9, 3e9))
	l.wait(l.draw(2, 20))
	accum := 8 + l.r.IntN(57)
	micro := l.draw(0.4, 5)
	release := l.r.IntN(2) == 0
	held, stepped := false, false
	end := l.t + l.draw(1800, 5400)
	for i := 1; l.t < end; i++ {
		keep := 0.0
		if !held {
			keep, held = grads*w, true
		}
		l.step(l.v, acts*w*l.draw(0.9, 1.1), keep, micro)
		if i%accum != 0 {
			continue
		}
		l.wait(l.draw(0.05, 0.3))
		if !stepped {
			l.add(state * w)
			stepped = true
		}
		l.wait(l.draw(0.05, 0.5))
		if release {
			l.add(-grads * w)
			held = false
		}
	}
	return end
}

// s7AlgoSearchSpikes: a vision service whose convolution library searches
// for the fastest algorithm the first time it meets an input shape. Each
// candidate asks for a workspace, some as large as what is free, for a
// fraction of a second. Shapes come by popularity, so the searches are
// many at first and then rare, and after each the level is back to the
// weights and the batch's activations.
func s7AlgoSearchSpikes(l *s7Line) float64 {
	l.weights(0.05, 0.3, l.start())
	base := l.v
	n := 5 + l.r.IntN(36)
	skew := l.draw(0.5, 1.5)
	cdf, acts := make([]float64, n), make([]float64, n)
	sum := 0.0
	for j := range n {
		sum += math.Pow(float64(j+1), -skew)
		cdf[j] = sum
		acts[j] = l.draw(0.05, 0.35) * l.room()
	}
	seen := make([]bool, n)
	period := 1 / l.draw(0.5, 8)
	end := l.t + l.draw(1800, 5400)
	for l.t < end {
		j := min(n-1, sort.SearchFloat64s(cdf, sum*l.r.Float64()))
		if !seen[j] {
			seen[j] = true
			for range 3 + l.r.IntN(10) {
				free := 0.9*l.size - l.fixed - base - acts[j]
				l.jump(base + acts[j] + free*l.draw(0.2, 0.97))
				l.wait(l.draw(0.02, 0.3))
				l.jump(base)
				l.wait(l.draw(0.01, 0.1))
			}
		}
		l.step(base, acts[j]*l.draw(0.95, 1), 0, period*l.draw(0.9, 1.1))
	}
	return end
}

// s7DecodeHighWater: a data pipeline that decodes images or video frames
// on the device with a few decoders, each keeping an output buffer as
// large as the largest item it has met. A larger item makes its decoder
// allocate a new buffer beside the old one, then free the old. Item sizes
// are heavy-tailed up to the largest resolution, so the level climbs in
// steps that come ever more rarely, and never past what the largest items
// need.
func s7DecodeHighWater(l *s7Line) float64 {
	room := l.start()
	l.weights(0.1, 0.35, room)
	l.add(l.draw(0.05, 0.2) * room)
	base := l.v
	decoders := 2 + l.r.IntN(7)
	most := l.draw(0.5, 0.95) * l.room() / float64(decoders+1)
	median := most * l.draw(0.02, 0.15)
	sigma := l.draw(0.5, 1)
	rate := l.draw(2, 50)
	gran := l.draw(1<<20, 4<<20)
	buf := make([]float64, decoders)
	held := 0.0
	end := l.t + l.draw(1800, 5400)
	for t := l.t; t < end; t += l.r.ExpFloat64() / rate {
		d := l.r.IntN(decoders)
		need := blocks(math.Min(most, median*l.spread(sigma)), gran)
		if need <= buf[d] {
			continue
		}
		l.wait(t - l.t)
		l.jump(base + held + need)
		l.wait(l.draw(0.01, 0.2))
		held += need - buf[d]
		buf[d] = need
		l.jump(base + held)
	}
	return end
}

// s7EvalGenerateRamps: a training Job that declares its length and, every
// few minutes, evaluates the model by generating text from a fixed set of
// prompts. Generation fills a key-value cache token by token, so the level
// climbs steadily for tens of seconds to well over the training's, then
// falls back at once when the round ends; a few rounds make one
// evaluation.
func s7EvalGenerateRamps(l *s7Line) float64 {
	planned := l.draw(2400, 9000)
	room := l.start()
	acts := l.draw(0.3, 1.5)
	w := l.draw(0.25, 0.5) * room / (4 + 1.05*acts)
	l.load(w, l.draw(1e9, 3e9))
	step := l.draw(0.3, 2)
	l.firstStep(acts*w, w, step)
	base := l.v
	top := l.draw(0.55, 0.95) * l.room()
	every, gen := l.draw(300, 1200), l.draw(20, 150)
	next := l.t + l.vary(every, 0.1)
	for l.t < planned {
		l.step(base, acts*w*l.draw(0.95, 1.05), 0, step)
		if l.t < next {
			continue
		}
		l.wait(l.draw(0.2, 1))
		for range 1 + l.r.IntN(3) {
			kv := top * l.draw(0.85, 1)
			l.add(kv * l.draw(0.05, 0.2))
			l.glide(base+kv, l.vary(gen, 0.2))
			l.wait(l.draw(0.2, 2))
			l.jump(base)
		}
		next = l.t + l.vary(every, 0.1)
	}
	return planned
}

// s7WeightAveraging: a training Job that declares its length and keeps
// averaged copies of its weights: an exponential moving average from the
// end of the warm-up, and a stochastic weight average in full precision
// from 60-80% of the run. Each copy appears as the weights' size copied
// once, late; the last minutes recompute the averaged model's
// normalization statistics in a forward-only pass.
func s7WeightAveraging(l *s7Line) float64 {
	planned := l.draw(1800, 7200)
	room := l.start()
	acts := l.draw(0.3, 2)
	w := l.draw(0.5, 0.95) * room / (6 + 1.1*acts)
	bps := l.draw(1e9, 3e9)
	l.load(w, bps)
	step := l.draw(0.3, 3)
	l.firstStep(acts*w, w, step)
	emaAt, swaAt := l.draw(0.02, 0.12)*planned, l.draw(0.6, 0.8)*planned
	ema, swa := false, false
	last := planned - l.draw(30, 300)
	for l.t < last {
		l.step(l.v, acts*w*l.draw(0.9, 1.1), 0, step)
		if !ema && l.t >= emaAt {
			l.load(w, 4*bps)
			ema = true
		}
		if !swa && l.t >= swaAt {
			l.load(w, 4*bps)
			swa = true
		}
	}
	for base := l.v; l.t < planned; {
		l.step(base, 0.4*acts*w*l.draw(0.9, 1.1), 0, 0.3*step)
	}
	return planned
}
