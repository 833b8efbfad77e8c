package tracegen

import "math"

// The quiet shapes of the fifth sealed set: each stays under 90% of its
// instance for its whole planned length and must never be marked.
// docs/predictor-sealed5.md says what each one follows.

// s5VersionSwap: an inference server that rolls out new versions of its
// model in place. The new version is read and warmed up while the old one
// still serves; once the new one has passed its checks the old one is
// unloaded, so the level doubles for a while at every rollout and comes
// back.
func s5VersionSwap(p *s5Tape) float64 {
	room := p.start()
	base, bps := p.level, p.draw(0.5e9, 3e9)
	w, kv := p.draw(0.15, 0.35)*room, p.draw(0.05, 0.12)*room
	p.copyIn(w, bps)
	p.stay(p.draw(0.5, 5))
	p.to(p.level + kv)
	end := p.now() + p.draw(1800, 5400)
	for p.now() < end {
		p.stay(p.draw(120, 900))
		w2, kv2 := p.jitter(w, 0.05), p.jitter(kv, 0.05)
		p.copyIn(w2, bps)
		p.stay(p.draw(0.5, 5))
		p.to(p.level + kv2)
		p.stay(p.draw(20, 180))
		p.to(base + w2 + kv2)
		w, kv = w2, kv2
	}
	return p.now() + p.draw(5, 60)
}

// s5SpillLimit: a data-processing Job on the GPU whose workers hold data
// partitions in device memory up to a configured limit and copy the
// oldest to host memory past it. Each stage of the Job piles up
// partitions (a steady climb), may hover at the limit while it spills,
// and frees them when its results are written.
func s5SpillLimit(p *s5Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.02, 0.05)*room, p.draw(1e9, 3e9))
	base := p.level
	limit := base + p.draw(0.6, 0.9)*(0.9*p.size-p.floor-base)
	part, gap := p.draw(0.005, 0.02)*room, p.draw(0.3, 2)
	for range 2 + p.r.IntN(4) {
		data, piled := p.draw(0.3, 3)*(limit-base), 0.0
		for piled < data {
			p.stay(gap * p.r.ExpFloat64())
			b := part * math.Min(3, math.Exp(0.4*p.r.NormFloat64()))
			piled += b
			p.to(p.level + b)
			if p.level > limit {
				p.glide(p.jitter(0.9, 0.05)*(p.level-base)+base, p.draw(0.5, 3))
			}
		}
		p.stay(p.draw(2, 30))
		p.glide(base, p.draw(0.2, 2))
		p.stay(p.draw(1, 20))
	}
	return p.now() + p.draw(5, 30)
}

// s5CheckpointGather: a sharded training Job that writes a full
// checkpoint every few minutes. Each rank holds only its shard; to save,
// the full weights are gathered layer by layer onto the device (a climb of
// some seconds), held while they are written, and freed at once.
func s5CheckpointGather(p *s5Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.1, 0.25)*room, p.draw(1e9, 3e9))
	p.to(p.level + p.draw(0.1, 0.2)*room)
	p.glide(p.level+p.draw(0.1, 0.2)*room, p.draw(0.3, 3))
	base := p.level
	full := p.draw(0.15, 0.9) * (0.9*p.size - p.floor - base)
	layers, every := 12+p.r.IntN(69), p.draw(300, 900)
	for range 3 + p.r.IntN(4) {
		p.stay(p.jitter(every, 0.1))
		gap := p.draw(0.05, 0.5)
		for range layers {
			p.to(p.level + full/float64(layers))
			p.stay(p.jitter(gap, 0.3))
		}
		p.stay(p.draw(5, 60))
		p.to(base)
	}
	return p.now() + p.draw(30, 300)
}

// s5SeqlenSchedule: pretraining whose sequence length rises on a schedule
// over its first stretch. Activations grow with the length, so the cache
// reserves a little more at each stage; once the schedule reaches its
// final length the level is flat.
func s5SeqlenSchedule(p *s5Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.1, 0.2)*room, p.draw(1e9, 3e9))
	p.to(p.level + p.draw(0.1, 0.25)*room)
	base := p.level
	acts := p.draw(0.4, 0.95) * (0.9*p.size - p.floor - base)
	stages := 8 + p.r.IntN(33)
	each := p.draw(300, 2400) / float64(stages)
	for i := 1; i <= stages; i++ {
		p.glide(base+acts*float64(i)/float64(stages), p.draw(0.1, 1))
		p.stay(p.jitter(each, 0.1))
	}
	return p.now() + p.draw(600, 3600)
}

// s5WorkerProcesses: a web server that runs several worker processes, each
// with its own context and its own copy of a model. They start a few
// seconds apart, and one is recycled now and then (it exits after a number
// of requests and a fresh one loads).
func s5WorkerProcesses(p *s5Tape) float64 {
	p.stay(p.draw(1, 15))
	room := 0.9*p.size - p.floor
	n := 2 + p.r.IntN(5)
	share := p.draw(0.7, 0.95) * room / float64(n)
	bps := p.draw(0.5e9, 3e9)
	boot := func() float64 {
		from := p.level
		p.to(from + math.Min(p.draw(0.25e9, 0.7e9), 0.3*share))
		p.stay(p.draw(0.5, 3))
		p.copyIn((from+share-p.level)*p.draw(0.6, 0.85), bps)
		for k := 1 + p.r.IntN(3); k > 0; k-- {
			p.to(p.level + (from+share-p.level)/float64(k))
			p.stay(p.draw(0.1, 1))
		}
		return p.level - from
	}
	held := make([]float64, n)
	for i := range held {
		held[i] = boot()
		p.stay(p.draw(0.5, 8))
	}
	end := p.now() + p.draw(1800, 5400)
	for p.now() < end {
		p.stay(math.Min(3600, p.draw(300, 1800)*p.r.ExpFloat64()))
		i := p.r.IntN(n)
		p.to(p.level - held[i])
		p.stay(p.draw(0.5, 5))
		held[i] = boot()
	}
	return p.now() + p.draw(5, 60)
}

// s5GCCycles: a server whose request handlers leave reference cycles that
// hold device tensors; they are freed only when the garbage collector
// runs, every minute or so. The caching allocator keeps what they freed,
// so the device sees the climb until the first collection and only small
// steps after, when a later spell between collections piles up more.
func s5GCCycles(p *s5Tape) float64 {
	room := p.start()
	p.copyIn(p.draw(0.2, 0.5)*room, p.draw(1e9, 3e9))
	p.to(p.level + p.draw(0.02, 0.05)*room)
	p.stay(p.draw(2, 30))
	t0, end := p.now(), p.now()+p.draw(1200, 3600)
	rate, every := p.draw(2, 40), p.draw(20, 180)
	var e s5Events
	next, pending := t0+p.jitter(every, 0.3), 0.0
	for t := t0 + p.r.ExpFloat64()/rate; t < end; t += p.r.ExpFloat64() / rate {
		if t >= next {
			e.add(next, -pending)
			next, pending = next+p.jitter(every, 0.3), 0
		}
		u := math.Exp(0.5 * p.r.NormFloat64())
		e.add(t, u)
		pending += u
	}
	peak := p.draw(0.2, 0.9) * (0.9*p.size - p.floor - p.level)
	p.play(e, e.scaleFor(end, peak)/1.02, p.draw(2<<20, 20<<20), true)
	return end
}

// s5ElasticRestart: elastic data-parallel training whose peers come and
// go. Every change of membership restarts the local worker from its last
// checkpoint: the process exits (everything goes), waits for the others,
// and loads again. Its optimizer state is sharded across the peers, so
// its plateau is higher when there are fewer of them.
func s5ElasticRestart(p *s5Tape) float64 {
	p.stay(p.draw(1, 15))
	room := 0.9*p.size - p.floor - math.Min(0.7e9, 0.07*p.size)
	weights, acts := p.draw(0.1, 0.25)*room, p.draw(0.1, 0.25)*room
	fewest := 1 + p.r.IntN(3)
	most := fewest + 1 + p.r.IntN(6)
	state := p.draw(0.5, 0.95) * (room - weights - acts) * float64(fewest)
	bps := p.draw(0.5e9, 3e9)
	peers := fewest + p.r.IntN(most-fewest+1)
	end := p.now() + p.draw(1800, 5400)
	for {
		p.context(0.07)
		p.stay(p.draw(0.5, 4))
		p.copyIn(weights, bps)
		p.copyIn(state/float64(peers), bps)
		steps := 1 + p.r.IntN(3)
		for range steps {
			p.glide(p.level+acts/float64(steps), p.draw(0.1, 1))
		}
		stay := p.draw(300, 1200) * p.r.ExpFloat64()
		if p.now()+stay >= end {
			break
		}
		p.stay(stay)
		p.to(0)
		p.stay(p.draw(2, 20))
		peers = min(most, max(fewest, peers+[]int{-2, -1, 1, 2}[p.r.IntN(4)]))
	}
	return end
}
