package tracegen

import (
	"math"
	"sort"
)

// The quiet shapes of the sixth sealed set: each stays under 90% of its
// instance for its whole planned length and must never be marked.
// docs/predictor-sealed6.md says what each one follows.

// s6SlidingWindowKV: a server for long conversations with a model whose
// attention looks back over a fixed window of tokens. Each session's
// key-value cache grows with every token until it holds a full window,
// then old tokens are overwritten and it grows no more. A fixed number of
// sessions run at a time; a session that ends is replaced by a fresh one.
// In half the runs the caching allocator keeps the peak; in the others a
// finished session's cache goes back at once.
func s6SlidingWindowKV(p *s6Tape) float64 {
	room := p.boot()
	p.load(p.draw(0.2, 0.45)*room, p.draw(0.8e9, 3e9))
	p.set(p.level + p.draw(0.02, 0.05)*room)
	p.hold(p.draw(3, 40))
	base := p.level
	n := 2 + p.r.IntN(15)
	window := p.draw(4096, 32768)
	budget := p.draw(0.3, 0.9) * (0.9*p.size - p.floor - p.lazy - base)
	perToken := budget / (float64(n) * window)
	tps := p.draw(10, 60)
	life := p.draw(600, 3600)
	cached := p.r.IntN(2) == 0
	block := p.draw(1<<20, 16<<20)
	tokens, starts, ends := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		starts[i] = p.now() + p.draw(0, 120)
		ends[i] = starts[i] + life*p.r.ExpFloat64()
	}
	end := p.now() + p.draw(1800, 5400)
	peak := 0.0
	for p.now() < end {
		t, total := p.now(), 0.0
		for i := range n {
			switch {
			case t >= ends[i]:
				tokens[i], starts[i] = 0, t+p.draw(1, 30)
				ends[i] = starts[i] + life*p.r.ExpFloat64()
			case t >= starts[i]:
				tokens[i] = math.Min(window, tokens[i]+tps/ShimHz*p.draw(0.5, 1.5))
			}
			total += tokens[i] * perToken
		}
		peak = math.Max(peak, total)
		if cached {
			total = peak
		}
		p.set(base + blocks(total, block))
	}
	return p.now()
}

// s6BucketRebuild: data-parallel training that declares its length. The
// first backward pass fills gradient buckets in the order the gradients
// come; after the first step the buckets are rebuilt in the order actually
// seen, so for a moment the old and the new buckets are both held. The
// communication library takes its buffers at the first exchange; the
// first optimizer step adds its two moment buffers. After that every step
// reuses what it has, bar one more rise at the first evaluation.
func s6BucketRebuild(p *s6Tape) float64 {
	planned := p.draw(1200, 5400)
	room := p.boot()
	acts := p.draw(0.5, 3)
	w := p.draw(0.5, 0.95) * room / (5 + acts + 0.6)
	step := p.draw(0.3, 3)
	p.load(w, p.draw(1e9, 3e9))
	p.hold(p.draw(1, 10))
	p.ramp(p.level+acts*w, step*p.draw(0.3, 0.5))
	buckets := 2 + p.r.IntN(7)
	for range buckets {
		p.set(p.level + w/float64(buckets))
		p.hold(p.draw(0.05, 0.3))
	}
	p.set(p.level + math.Min(p.draw(0.05e9, 0.4e9), 0.3*w))
	p.hold(p.draw(0.1, 0.5))
	p.set(p.level + 2*w)
	p.hold(step)
	for range buckets {
		p.set(p.level + w/float64(buckets))
		p.hold(p.draw(0.02, 0.1))
	}
	if p.r.IntN(2) == 0 {
		p.hold(p.draw(0.1, 2))
		p.set(p.level - w)
	}
	p.hold(p.draw(120, 900))
	p.ramp(p.level+p.draw(0, 0.3)*w, p.draw(0.2, 2))
	return planned
}

// s6GradualUnfreeze: fine-tuning that declares its length and unfreezes
// the model a group of layers at a time, the top first, one more group
// every epoch. Each group unfrozen adds its gradients during the next
// backward pass, its optimizer's two moment buffers at the next step, and
// the activations the backward pass now needs to keep. Once every group
// is unfrozen the level is flat to the end.
func s6GradualUnfreeze(p *s6Tape) float64 {
	planned := p.draw(1800, 7200)
	room := p.boot()
	groups := 3 + p.r.IntN(6)
	acts := p.draw(0.2, 1)
	m := p.draw(0.5, 0.95) * room / (1 + 3 + acts + 0.05)
	p.load(m, p.draw(0.8e9, 3e9))
	p.set(p.level + 0.05*m)
	last := p.draw(0.4, 0.8) * planned
	epoch := (last - p.now()) / float64(groups)
	each := m / float64(groups)
	for range groups {
		p.ramp(p.level+acts*each, p.draw(0.2, 1))
		p.ramp(p.level+each, p.draw(0.1, 0.8))
		p.hold(p.draw(0.05, 0.5))
		p.set(p.level + 2*each)
		p.hold(p.vary(epoch, 0.05))
	}
	return planned
}

// s6LazyPipeline: a document-processing service built from several
// models (layout, tables, text recognition, a language model) that loads
// each one the first time a request needs it. Some are needed by nearly
// every request, others by few, so the loads come early or minutes
// apart, and then the level is flat.
func s6LazyPipeline(p *s6Tape) float64 {
	room := p.boot()
	n := 3 + p.r.IntN(4)
	share := make([]float64, n)
	sum := 0.0
	for i := range share {
		share[i] = p.draw(0.2, 1)
		sum += share[i]
	}
	total := p.draw(0.4, 0.9) * room
	bps := p.draw(0.5e9, 3e9)
	need := make([]float64, n)
	for i := range need {
		need[i] = math.Pow(10, p.draw(-2.5, 0))
	}
	rate := p.draw(0.05, 2)
	end := p.now() + p.draw(1800, 5400)
	loaded := make([]bool, n)
	for p.now() < end {
		p.hold(p.r.ExpFloat64() / rate)
		for i := range n {
			if loaded[i] || p.r.Float64() > need[i] {
				continue
			}
			loaded[i] = true
			size := share[i] / sum * total
			p.load(0.93*size, bps)
			p.hold(p.draw(0.2, 2))
			p.set(p.level + 0.07*size)
		}
	}
	return p.now()
}

// s6PrefixCacheBudget: a server that keeps the key-value cache of prompt
// prefixes it has seen (system prompts, shared documents) under a budget.
// Popular prefixes are cached first, so new entries come less and less
// often; once the budget is reached, the least recently used entries make
// room and the level stays.
func s6PrefixCacheBudget(p *s6Tape) float64 {
	room := p.boot()
	p.load(p.draw(0.15, 0.4)*room, p.draw(1e9, 3e9))
	p.set(p.level + p.draw(0.02, 0.05)*room)
	p.hold(p.draw(3, 30))
	base := p.level
	budget := p.draw(0.3, 0.9) * p.room()
	n := 20000
	zipf := p.draw(0.8, 1.3)
	cdf := make([]float64, n)
	acc := 0.0
	for i := range cdf {
		acc += math.Pow(float64(i+1), -zipf)
		cdf[i] = acc
	}
	sizes := make([]float64, n)
	mean := p.draw(2, 10) * budget / float64(n)
	for i := range sizes {
		sizes[i] = mean * p.lognorm(0.7) / math.Exp(0.245)
	}
	seen := make([]bool, n)
	rate := p.draw(1, 20)
	block := p.draw(1<<20, 16<<20)
	filled := 0.0
	end := p.now() + p.draw(1800, 5400)
	for t := p.now(); t < end; t += p.r.ExpFloat64() / rate {
		k := min(n-1, sort.SearchFloat64s(cdf, acc*p.r.Float64()))
		if seen[k] {
			continue
		}
		seen[k] = true
		filled = math.Min(budget, filled+sizes[k])
		if v := base + blocks(filled, block); v > p.level {
			p.hold(t - p.now())
			p.set(v)
		}
	}
	return end
}

// s6ArenaShrink: an inference runtime whose memory arena grows to fit
// each run and gives back what it grew at the end of the run (the
// arena's shrinking option). Requests of varied sizes come at random,
// up to a few at once, so the level leaps up and falls back to the
// arena's first chunk, request after request.
func s6ArenaShrink(p *s6Tape) float64 {
	room := p.boot()
	p.load(p.draw(0.15, 0.4)*room, p.draw(1e9, 3e9))
	chunk := p.draw(0.02, 0.08) * room
	p.set(p.level + chunk)
	base := p.level
	lanes := 1 + p.r.IntN(4)
	most := 0.95 * p.room() / float64(lanes)
	median := p.draw(0.1, 0.4) * most
	spread := p.draw(0.4, 0.8)
	rate, service := p.draw(0.5, 10), p.draw(0.05, 1.5)
	block := p.draw(1<<20, 8<<20)
	busy := make([]float64, lanes) // when each lane is free again
	need := make([]float64, lanes)
	end := p.now() + p.draw(1800, 5400)
	for t := p.now(); t < end; t += p.r.ExpFloat64() / rate {
		for p.now() < t {
			total := 0.0
			for i := range lanes {
				if busy[i] > p.now() {
					total += need[i]
				}
			}
			p.set(base + blocks(math.Max(0, total-chunk), block))
		}
		for i := range lanes {
			if busy[i] <= t {
				busy[i] = t + service*p.lognorm(0.5)
				need[i] = math.Min(most, median*p.lognorm(spread))
				break
			}
		}
	}
	return end
}
