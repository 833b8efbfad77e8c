package tracegen

import "math"

// The quiet shapes of the fourth sealed set: each stays under 90% of its
// instance for its whole planned length and must never be marked.
// docs/predictor-sealed4.md says what each one follows.

// s4PipelineStages: a Job that preprocesses its data on the GPU, trains,
// then exports the model; each stage holds its own flat level and gives it
// back before the next begins.
func s4PipelineStages(p *s4Tape) float64 {
	room := p.start()
	base := p.level
	for range 1 + p.r.IntN(4) {
		p.to(p.level + p.draw(0.04, 0.15)*room)
		p.stay(p.draw(0.05, 0.5))
	}
	p.stay(p.draw(60, 400))
	p.glide(base, p.draw(0.1, 1))
	p.stay(p.draw(2, 20))
	w := p.draw(0.1, 0.3) * room
	p.copyIn(w, p.draw(1e9, 4e9))
	p.to(p.level + w*p.draw(1, 2))
	p.stay(p.draw(1, 10))
	p.glide(base+p.draw(0.5, 0.95)*room, p.draw(0.3, 3))
	p.stay(p.draw(300, 1500))
	p.glide(base+w, p.draw(0.1, 1))
	p.stay(p.draw(1, 5))
	p.to(p.level + p.draw(0.05, 0.3)*room)
	p.stay(p.draw(20, 120))
	p.to(base)
	return p.now() + p.draw(5, 30)
}

// s4EmbeddingShards: a recommender that loads its embedding tables shard
// by shard, then trains with a small per-step rise and fall.
func s4EmbeddingShards(p *s4Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.02, 0.1)*room, p.draw(1e9, 3e9))
	n := 8 + p.r.IntN(57)
	sizes, sum := make([]float64, n), 0.0
	for i := range sizes {
		sizes[i] = math.Exp(0.5 * p.r.NormFloat64())
		sum += sizes[i]
	}
	total, bps := p.draw(0.4, 0.8)*room, p.draw(0.5e9, 3e9)
	for _, s := range sizes {
		p.stay(p.draw(0.2, 3))
		p.copyIn(total*s/sum, bps)
	}
	p.stay(p.draw(2, 30))
	base, act := p.level, p.draw(0.02, 0.08)*room
	step := p.draw(0.3, 2)
	end := p.now() + p.draw(600, 2400)
	for p.now() < end {
		d := p.jitter(step, 0.1)
		p.glide(base+p.jitter(act, 0.05), 0.6*d)
		p.glide(base, 0.1)
		p.stay(0.3 * d)
	}
	return p.now() + p.draw(2, 20)
}

// s4SweepTrials: a hyperparameter sweep that runs its trials one after
// another in one process; each trial allocates its model and its batch's
// activations and gives them all back when it ends.
func s4SweepTrials(p *s4Tape) float64 {
	room := p.start()
	base := p.level
	for range 4 + p.r.IntN(9) {
		w := p.draw(0.05, 0.35) * room
		p.copyIn(w, p.draw(1e9, 4e9))
		top := base + math.Max(w+0.02*room, p.draw(0.2, 1)*room)
		steps := 1 + p.r.IntN(3)
		for i := 1; i <= steps; i++ {
			p.glide(base+w+(top-base-w)*float64(i)/float64(steps), p.draw(0.1, 0.8))
		}
		p.stay(p.draw(40, 300))
		p.glide(base, float64(1+p.r.IntN(3))/ShimHz)
		p.stay(p.draw(1, 10))
	}
	return p.now() + p.draw(2, 20)
}

// s4RLAlternating: reinforcement learning that alternates rollouts (the
// policy acting, with environment buffers) and updates (optimiser state
// and a large batch's activations), freeing one phase's buffers when the
// other starts.
func s4RLAlternating(p *s4Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.05, 0.2)*room, p.draw(1e9, 3e9))
	base := p.level
	rollout, update := p.draw(0.05, 0.3)*room, p.draw(0.2, 0.7)*room
	roll, upd := p.draw(5, 60), p.draw(2, 30)
	end := p.now() + p.draw(900, 3600)
	for p.now() < end {
		p.glide(base+p.jitter(rollout, 0.05), p.draw(0.1, 0.5))
		p.stay(p.jitter(roll, 0.3))
		p.to(base)
		p.glide(base+p.jitter(update, 0.05), p.draw(0.2, 1.5))
		p.stay(p.jitter(upd, 0.3))
		p.to(base)
	}
	return p.now() + p.draw(1, 10)
}

// s4DiffusionDecode: an image generation server. Each request holds a
// denoising workspace for its steps, then decodes the image to pixels with
// a short, larger spike. Half the runs give the memory back after every
// request; the others keep it cached, so the level stays at the largest
// request so far.
func s4DiffusionDecode(p *s4Tape) float64 {
	room := p.start()
	bps := p.draw(1e9, 4e9)
	for _, f := range []float64{p.draw(0.02, 0.08), p.draw(0.15, 0.4), p.draw(0.01, 0.03)} {
		p.stay(p.draw(0.2, 2))
		p.copyIn(f*room, bps)
	}
	base, keep := p.level, p.r.IntN(2) == 0
	work, spike := p.draw(0.05, 0.15)*room, p.draw(0.1, 0.3)*room
	gap := p.draw(3, 60)
	end := p.now() + p.draw(600, 2400)
	for high := base; p.now() < end; {
		p.stay(gap * p.r.ExpFloat64())
		res := p.draw(0.5, 1)
		p.to(math.Max(p.level, base+work*res))
		p.stay(p.draw(2, 20))
		p.to(math.Max(p.level, base+(work+spike)*res))
		p.stay(p.draw(0.3, 2))
		high = math.Max(high, p.level)
		if keep {
			p.to(high)
		} else {
			p.to(base)
		}
	}
	return p.now() + p.draw(1, 10)
}

// s4VideoStreams: a video analytics server whose hardware decoder needs a
// pool of surfaces per stream; cameras join and leave, up to the streams
// the server is configured for. Half the runs keep a left stream's pool for
// the next one.
func s4VideoStreams(p *s4Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.1, 0.3)*room, p.draw(1e9, 3e9))
	base, limit := p.level, 4+p.r.IntN(29)
	pool := p.draw(0.8, 0.98) * (0.9*p.size - p.floor - base) / float64(limit)
	keep := p.r.IntN(2) == 0
	join, stay := p.draw(5, 60), p.draw(60, 900)
	var leaves []float64
	end := p.now() + p.draw(900, 2700)
	for next := p.now(); p.now() < end; {
		p.stay(0.1)
		live := leaves[:0]
		for _, t := range leaves {
			if t > p.now() {
				live = append(live, t)
			}
		}
		leaves = live
		if !keep {
			p.to(base + float64(len(leaves))*pool)
		}
		if p.now() < next || len(leaves) == limit {
			continue
		}
		next = p.now() + join*p.r.ExpFloat64()
		leaves = append(leaves, p.now()+stay*p.r.ExpFloat64())
		want := base + float64(len(leaves))*pool
		if want > p.level {
			parts := 2 + p.r.IntN(3)
			from := p.level
			for i := 1; i <= parts; i++ {
				p.to(from + (want-from)*float64(i)/float64(parts))
				p.stay(p.draw(0.1, 0.5))
			}
		}
	}
	return p.now() + p.draw(1, 10)
}

// s4ExpertCache: a mixture-of-experts server that keeps only some experts
// on the device, loading one when a request routes to it and evicting the
// least recently used when the cache is full. Popular experts come first,
// so the loads thin out.
func s4ExpertCache(p *s4Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.15, 0.35)*room, p.draw(1e9, 4e9))
	p.to(p.level + p.draw(0.05, 0.2)*room)
	experts := 16 + p.r.IntN(113)
	slots := max(2, int(p.draw(0.2, 0.6)*float64(experts)))
	size := p.draw(0.85, 0.98) * (0.9*p.size - p.floor - p.level) / float64(slots)
	skew, bps := p.draw(0.6, 1.4), p.draw(2e9, 6e9)
	weights, sum := make([]float64, experts), 0.0
	for i := range weights {
		weights[i] = math.Pow(float64(i+1), -skew)
		sum += weights[i]
	}
	used := map[int]float64{}
	gap := p.draw(0.05, 1)
	end := p.now() + p.draw(600, 1800)
	for p.now() < end {
		p.stay(gap * p.r.ExpFloat64())
		u, e := p.r.Float64()*sum, 0
		for ; e < experts-1 && u > weights[e]; e++ {
			u -= weights[e]
		}
		if _, ok := used[e]; !ok {
			if len(used) == slots {
				old, oldest := -1, math.Inf(1)
				for k, t := range used {
					if t < oldest || (t == oldest && k < old) {
						old, oldest = k, t
					}
				}
				delete(used, old)
				p.to(p.level - size)
			}
			p.copyIn(size, bps)
		}
		used[e] = p.now()
	}
	return p.now() + p.draw(1, 10)
}
