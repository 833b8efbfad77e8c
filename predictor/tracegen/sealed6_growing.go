package tracegen

import "math"

// The growing shapes of the sixth sealed set: each runs out of its
// instance and must be marked before it does (at least 5 s ahead at the
// shim's rate; with a declared horizon, by a quarter of its way to the
// OOM). Each sizes its growth from what is left so that the instance
// fills near a drawn time; docs/predictor-sealed6.md says what each one
// follows.

// s6StreamingGroupBy: a streaming aggregation on the GPU that counts by
// key over an endless stream of batches, in a memory pool that grows by a
// set increment whenever it runs short. The number of distinct keys keeps
// rising, ever slower; the keys live in a hash table split into
// partitions, and a partition that gets too full is rebuilt at twice its
// size, holding the old and the new copy for a moment. Each batch's input
// buffers come from the same pool.
func s6StreamingGroupBy(p *s6Tape) float64 {
	p.boot()
	left := p.left()
	pool := p.draw(0.1, 0.4) * left
	p.set(p.level + pool)
	p.hold(p.draw(2, 30))
	base := p.level - pool
	full := p.draw(600, 3600)
	period := p.draw(0.5, 5)
	beta := p.draw(0.5, 0.9)
	parts := 8 + p.r.IntN(57)
	skew := make([]float64, parts)
	for i := range skew {
		skew[i] = p.vary(1, 0.15)
	}
	batches := int(3 * full / period)
	keysAt := func(b int) float64 { return 1e6 * math.Pow(float64(b)/(full/period), beta) }
	caps := make([]float64, parts)
	var need []float64
	for b := 1; b <= batches; b++ {
		state, rebuild := 0.0, 0.0
		for i := range caps {
			keys := keysAt(b) * skew[i] / float64(parts)
			grown := math.Max(1024, math.Exp2(math.Ceil(math.Log2(keys/0.7))))
			if grown > caps[i] && caps[i] > 0 {
				rebuild += caps[i]
			}
			caps[i] = math.Max(caps[i], grown)
			state += caps[i]
		}
		need = append(need, state+rebuild)
	}
	input := p.draw(0.05, 0.3) * need[int(full/period)-1]
	high := 0.0
	for b := range int(full/period) - 1 {
		high = math.Max(high, need[b]+input)
	}
	scale := 1.02 * left / high
	step := p.draw(0.01, 0.1) * left
	t0 := p.now()
	for b := range batches {
		if p.over() || p.now() > s6Limit {
			break
		}
		p.hold(t0 + float64(b)*period*p.vary(1, 0.05) - p.now())
		if v := (need[b] + input*p.vary(1, 0.3)) * scale; v > pool {
			pool += math.Max(step, v-pool)
			p.set(base + pool)
		}
	}
	return 0
}

// s6InstanceAutoscale: an inference server that runs more copies of its
// model in the same process as its load rises (each copy its own weights
// and workspace) and, with its scale-down delay longer than the day's
// rise, never drops one. The load is measured over a minute; the next
// copy is loaded when the copies running are busier than the target.
func s6InstanceAutoscale(p *s6Tape) float64 {
	p.boot()
	n := 8 + p.r.IntN(13)
	each := p.left() / (float64(n-1) + p.draw(0.3, 0.9))
	bps := p.draw(0.8e9, 3e9)
	add := func() {
		p.load(0.85*each, bps)
		p.hold(p.draw(0.2, 2))
		p.set(p.level + 0.15*each)
	}
	add()
	full := p.draw(1200, 5400)
	t0 := p.now()
	target := p.draw(0.5, 0.8)
	// the load in copies' worth: one copy's worth at t0, n at full
	rise := float64(n-1) * target / full
	copies := 1
	for !p.over() && p.now() < s6Limit {
		p.hold(60)
		load := target + rise*(p.now()-t0)
		load *= 1 + 0.08*p.r.NormFloat64()
		if load/float64(copies) > target {
			copies++
			add()
		}
	}
	return 0
}

// s6IndexRebuild: a search service whose vector index lives on the device.
// Documents are added in batches a few seconds to a minute apart; every so
// often the index is rebuilt for better recall: the new index is built
// beside the old one over some seconds, then the old one is freed. The
// rebuild's peak grows with the index; the OOM comes in a rebuild.
func s6IndexRebuild(p *s6Tape) float64 {
	room := p.boot()
	p.load(p.draw(0.1, 0.3)*room, p.draw(1e9, 3e9))
	p.set(p.level + p.draw(0.02, 0.05)*room)
	p.hold(p.draw(5, 60))
	base := p.level
	left := p.left()
	spare := p.draw(1.05, 1.25) // the new index's size over the old one's
	start := p.draw(0.05, 0.3) * left / (1 + spare)
	full := p.draw(900, 3600)
	// the index reaches left/(1+spare) by full: its rebuild then does not fit
	rate := (left/(1+spare) - start) / full
	p.ramp(base+start, p.draw(10, 60))
	index := start
	every, gap := p.draw(300, 1200), p.draw(5, 60)
	next := p.now() + p.vary(every, 0.2)
	for !p.over() && p.now() < s6Limit {
		p.hold(p.vary(gap, 0.5))
		index += rate * gap * p.lognorm(0.3)
		p.ramp(base+index, p.draw(1, 10))
		if p.now() >= next {
			p.ramp(base+index*(1+spare), p.draw(5, 60))
			if p.over() {
				break
			}
			p.hold(p.draw(0.5, 5))
			p.set(base + index*spare)
			index *= spare
			next = p.now() + p.vary(every, 0.2)
		}
	}
	return 0
}

// s6PrefetchAutotune: a training loop fed by an input pipeline whose
// prefetch depth is tuned at run time: whenever a step waits for its data
// (storage slows down now and then), the tuner raises the number of
// batches staged on the device, and it never lowers it. The buffers are
// sized for batches that fit, but nothing bounds the depth.
func s6PrefetchAutotune(p *s6Tape) float64 {
	room := p.boot()
	p.load(p.draw(0.1, 0.25)*room, p.draw(1e9, 3e9))
	p.ramp(p.level+p.draw(0.2, 0.45)*room, p.draw(0.5, 3))
	p.set(p.level + p.draw(0.05, 0.15)*room)
	depth := 2
	batch := p.left() / (float64(12+p.r.IntN(29)) - p.draw(0.1, 0.7))
	for range depth {
		p.set(p.level + batch)
	}
	full := p.draw(600, 3600)
	stall := full / (p.left() / batch / 2)
	for !p.over() && p.now() < s6Limit {
		p.hold(stall * p.r.ExpFloat64())
		for range 1 + p.r.IntN(3) {
			p.hold(p.draw(0.1, 1))
			p.set(p.level + batch)
			if p.over() {
				break
			}
		}
	}
	return 0
}

// s6SnapshotBacklog: a training Job that declares its length and saves
// snapshots asynchronously: each save copies the model's state to a
// staging buffer on the device and goes on training while an uploader
// sends the oldest staged snapshot to remote storage. Uploads are slower
// than saves, so staged snapshots pile up until one does not fit.
func s6SnapshotBacklog(p *s6Tape) float64 {
	planned := p.draw(2400, 7200)
	room := p.boot()
	bps := p.draw(1e9, 3e9)
	p.load(p.draw(0.1, 0.25)*room, bps)
	p.ramp(p.level+p.draw(0.1, 0.3)*room, p.draw(0.5, 3))
	p.hold(p.draw(5, 60))
	m := 3 + p.r.IntN(6)
	snap := p.left() / (float64(m-1) + p.draw(0.3, 0.9))
	slow := p.draw(1.2, 3) // an upload's time over the save period
	saves := math.Ceil(float64(m) / (1 - 1/slow))
	period := (p.draw(0.3, 0.85)*planned - p.now()) / saves
	upload := slow * period
	var queue []float64 // when each staged snapshot's upload ends
	nextSave := p.now() + p.vary(period, 0.05)
	free := 0.0 // when the uploader is free
	for !p.over() && p.now() < s6Limit {
		p.hold(1)
		for len(queue) > 0 && queue[0] <= p.now() {
			queue = queue[1:]
			p.set(p.level - snap)
		}
		if p.now() >= nextSave {
			p.ramp(p.level+snap, snap/bps/4)
			done := math.Max(p.now(), free) + p.vary(upload, 0.1)
			free = done
			queue = append(queue, done)
			nextSave = p.now() + p.vary(period, 0.05)
		}
	}
	return planned
}

// s6DatasetCache: a training Job that declares its length and, to spare
// later epochs the decoding, keeps every decoded batch of its first epoch
// on the device. The cache was sized for a dataset that does not fit:
// it fills batch by batch, pausing when storage is slow, until it runs
// out.
func s6DatasetCache(p *s6Tape) float64 {
	planned := p.draw(1800, 7200)
	epochs := 3 + p.r.IntN(18)
	room := p.boot()
	p.load(p.draw(0.1, 0.25)*room, p.draw(1e9, 3e9))
	p.ramp(p.level+p.draw(0.15, 0.35)*room, p.draw(0.5, 3))
	p.hold(p.draw(2, 20))
	fits := p.draw(0.3, 0.85) // the share of an epoch the cache holds
	epoch := (planned - p.now()) / float64(epochs)
	step := p.draw(0.1, 1)
	per := p.left() / (fits * epoch / step)
	block := p.draw(2<<20, 64<<20)
	base, cached := p.level, 0.0
	slowAt := p.now() + p.draw(30, 300)*p.r.ExpFloat64()
	for !p.over() && p.now() < s6Limit {
		p.hold(p.vary(step, 0.2))
		if p.now() >= slowAt {
			p.hold(p.draw(5, 60))
			slowAt = p.now() + p.draw(30, 300)*p.r.ExpFloat64()
		}
		cached += per * p.lognorm(0.2)
		if v := base + blocks(cached, block); v != p.level {
			p.set(v)
		}
	}
	return planned
}
