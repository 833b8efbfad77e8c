package tracegen

import "math"

// The growing shapes of the ninth sealed set without a horizon: each runs
// out of its instance and must be marked at least 5 s ahead at the shim's
// rate. Each sizes its growth from what is left once it is up, so that the
// instance fills near a drawn round, time, analysis or task count, never
// at a planned byte level; docs/predictor-sealed9.md says what each one
// follows.

// s9PINNCollocation: a physics-informed network trained on collocation
// points where the equation's residual is enforced, with adaptive
// refinement: every round it scores the residual on a large pool of
// candidate points, chunk by chunk, and adds a share of the worst ones to
// its training set. A training step's activations, with the derivatives
// the residual needs, grow with the number of points, so each round's
// steps are taller and slower than the last, until a step does not fit.
// Growth by a factor a round, under a sawtooth and the scoring's spikes.
func s9PINNCollocation(w *s9Work) float64 {
	w.boot()
	net := w.between(0.003, 0.02) * w.left()
	w.alloc(4 * net) // weights, gradients, two moments
	chunk := w.between(0.04, 0.15) * w.left()
	left := w.left()
	rounds := 6 + w.r.IntN(35) // the round whose steps do not fit
	g := w.between(1.05, 1.3)  // the points' growth a round
	a0 := left * w.between(1.0, 1.04) / math.Pow(g, float64(rounds))
	points := w.between(0.001, 0.01) // the points themselves over a step's activations
	iters := 200 + w.r.IntN(1801)
	eta := w.between(0.4, 1) // a step's time grows as the points to this power
	norm := 0.0
	for k := range rounds + 1 {
		norm += float64(iters) * math.Pow(g, float64(k)*eta)
	}
	step0 := w.between(600, 7200) / norm
	chunks, score := 3+w.r.IntN(18), w.between(0.1, 1)
	for k := 0; w.t < s9Limit; k++ {
		a := a0 * math.Pow(g, float64(k))
		step := step0 * math.Pow(g, float64(k)*eta)
		for range chunks {
			if w.climbRefused(chunk, 0.3, score*w.between(0.8, 1.2)) {
				return 0
			}
		}
		if w.refused(points * a * (1 - 1/g)) {
			return 0
		}
		for range iters {
			if w.climbRefused(a*w.between(0.97, 1.03), 0.45, step*w.between(0.9, 1.1)) {
				return 0
			}
		}
	}
	return 0
}

// s9StalledWatermark: a stream-processing job on the GPU that joins or
// aggregates events in event-time windows, keeping each window's state
// until the watermark (the oldest event time still expected) passes the
// window's end plus the allowed lateness. Its watermark is the least over
// its input partitions; one partition's producer goes quiet, its watermark
// stops, and no window closes from then on, so state piles up at the
// input rate until a batch does not fit. In half the runs the state's
// memory pool keeps what closed windows gave back (the level is flat at
// the windows' peak before the stall); in the others it is freed (a
// sawtooth a window long). Then a climb, steady but for the traffic.
func s9StalledWatermark(w *s9Work) float64 {
	room := w.boot()
	w.alloc(w.between(0.03, 0.12) * room) // the plan's buffers and lookup tables
	base := w.v
	pooled := w.r.IntN(2) == 0
	win, late := w.between(10, 300), w.between(5, 120)
	every := w.between(0.2, 2)
	batch := w.between(0.005, 0.03) * w.left()
	space := w.left() - batch
	rate := space / (win + late + w.between(300, 3600)) // state bytes a second at the mean traffic
	stall := w.t + w.between(180, 2400)
	chunk := space / w.between(40, 400)
	period, swing, phase := w.between(600, 3600), w.between(0, 0.3), w.between(0, 2*math.Pi)
	t0 := w.t
	var windows []float64
	closed, held, most := 0, 0.0, 0.0
	for w.t < s9Limit {
		k := int((w.t - t0) / win)
		for len(windows) <= k {
			windows = append(windows, 0)
		}
		in := rate * every * (1 + swing*math.Sin(2*math.Pi*(w.t-t0)/period+phase)) * w.spread(0.15, 2)
		windows[k] += in
		held += in
		if w.t < stall {
			for mark := w.t - t0 - 2; closed < k && float64(closed+1)*win+late <= mark; closed++ {
				held -= windows[closed]
			}
		}
		most = math.Max(most, held)
		kept := held
		if pooled {
			kept = most
		}
		w.level(base + math.Ceil(kept/chunk)*chunk)
		if w.v > w.limit() {
			return 0
		}
		busy := every * w.between(0.4, 0.9)
		if w.climbRefused(batch*w.between(0.8, 1), 0.3, busy) {
			return 0
		}
		w.wait(every - busy)
	}
	return 0
}

// s9SearchTree: an analysis engine for a board game that searches with a
// neural network's evaluations and keeps its search tree on the device, in
// a node pool that grows a chunk at a time. Users send positions one after
// another; each analysis takes the evaluator's batch buffers while it
// runs, and grows the tree fast at first and slower as the search
// revisits what it has, for as long as the user lets it. The tree is kept
// between positions for reuse, and nothing prunes what the game has left
// behind, so the pool only grows, in chunks during analyses and not at all
// between them, until a chunk does not fit.
func s9SearchTree(w *s9Work) float64 {
	room := w.boot()
	w.upload(w.between(0.05, 0.25)*room, w.between(1e9, 3e9)) // the evaluator
	buffers := w.between(0.02, 0.08) * room
	space := w.left() - buffers
	positions := 20 + w.r.IntN(281)
	cycle := w.between(600, 7200) / float64(positions)
	busy := w.between(0.2, 0.8)
	think, idle := cycle*busy, cycle*(1-busy)
	perPos := space / float64(positions) // tree bytes an analysis adds, on average
	chunk := space / w.between(20, 300)
	pool, tree := 0.0, 0.0
	for w.t < s9Limit {
		w.wait(w.expo(idle))
		d := think * w.spread(0.6, 4)
		add := perPos * d / think * w.spread(0.5, 4)
		tau := d * w.between(0.3, 3)
		if w.refused(buffers) {
			return 0
		}
		t0, grown := w.t, 0.0
		for w.t < t0+d {
			dt := w.between(0.1, 0.5)
			now := add * (1 - math.Exp(-(w.t+dt-t0)/tau)) / (1 - math.Exp(-d/tau))
			tree, grown = tree+now-grown, now
			for tree > pool {
				pool += chunk
				if w.refused(chunk) {
					return 0
				}
			}
			w.wait(dt)
		}
		w.alloc(-buffers)
	}
	return 0
}

// s9TaskAnchors: a continual-learning Job that learns tasks one after
// another and, to keep what it learnt, adds a penalty for every past task:
// at each task's end it estimates how much each weight mattered (per-sample
// gradients, chunk by chunk) and keeps that importance and a copy of the
// weights as the task's anchor, with a few of the task's samples for
// rehearsal. Every training step computes every anchor's penalty, whose
// temporaries live until the backward pass. The base steps up by two
// models' worth at each task's end and the steps' peaks grow faster still,
// until a step does not fit.
func s9TaskAnchors(w *s9Work) float64 {
	room := w.boot()
	bps := w.between(1e9, 4e9)
	w.upload(w.between(0.02, 0.1)*room, bps) // the first task's data
	left := w.left()
	tasks := 3 + w.r.IntN(23) // the task whose steps do not fit
	acts := w.between(0.05, 0.2) * left
	beta := w.between(0.5, 2)    // an anchor's penalty temporaries, in weights
	keep := w.between(0.02, 0.3) // an anchor's rehearsal samples, in weights
	m := (left*w.between(1.0, 1.03) - acts) / (4 + float64(tasks)*(2+keep+beta))
	w.upload(m, bps)
	per := w.between(900, 8000) / float64(tasks)
	step := w.between(0.2, 2)
	importance := w.between(1, 2.5) * m
	first := true
	for k := 0; w.t < s9Limit; k++ {
		for stop := w.t + per*w.between(0.85, 1); w.t < stop; {
			if w.climbRefused((acts+beta*float64(k)*m)*w.between(0.97, 1.03), 0.4, step*w.between(0.9, 1.1)) {
				return 0
			}
			if first {
				first = false
				if w.refused(3 * m) { // gradients and two moments
					return 0
				}
			}
		}
		for range 3 + w.r.IntN(8) {
			if w.climbRefused(importance, 0.5, w.between(0.5, 3)) {
				return 0
			}
		}
		if w.refused((2 + keep) * m) {
			return 0
		}
		w.wait(w.between(2, 20)) // the next task's data arrives
	}
	return 0
}

// The growing shapes with a declared horizon: each runs out before 95% of
// its planned length and must be marked by a quarter of its way to the OOM.

// s9SplatDensify: a scene reconstructed from photos as a cloud of small
// Gaussian blobs, trained for a declared number of iterations. Every
// hundred iterations, blobs where the view-space gradient is large are
// cloned or split and nearly transparent ones are pruned; every few
// thousand iterations the opacities are reset, and many blobs are pruned
// soon after. Each blob carries its parameters, their gradients, two
// optimizer moments and densification statistics; each iteration's
// rasterizer buffers grow with the count, and so does its time. The
// threshold was set for a smaller scene, so the count outgrows the
// instance before densification stops: a sawtooth that climbs by a
// shrinking factor every densification, with a drop after every reset,
// until an iteration or a densification does not fit.
func s9SplatDensify(w *s9Work) float64 {
	planned := w.between(1800, 7200)
	room := w.boot()
	w.upload(w.between(0.03, 0.25)*room, w.between(1e9, 4e9)) // the photos
	left := w.left()
	rounds := 60 + w.r.IntN(191) // densifications planned
	const every = 100            // iterations between them
	// the count grows 8-60 times over the densifications: a share of that
	// in a burst that settles over 5-25 rounds, the rest a steady floor
	// net of the routine pruning; a reset prunes 30-70% of what the floor
	// grows over a cycle
	grow, burst, settle := math.Log(w.between(8, 60)), w.between(0.3, 0.7), w.between(5, 25)
	g0, floor := burst*grow/settle, (1-burst)*grow/float64(rounds)
	resetEvery := 20 + w.r.IntN(21)
	resetPrune := w.between(0.3, 0.7) * (1 - math.Exp(-floor*float64(resetEvery)))
	render := w.between(0.5, 3) // an iteration's buffers over the blobs' state
	counts := []float64{1}
	for k := 1; k <= rounds+1; k++ {
		c := counts[k-1] * math.Exp(g0*math.Exp(-float64(k)/settle)+floor)
		if k%resetEvery == 0 {
			c *= 1 - resetPrune
		}
		counts = append(counts, c)
	}
	need := func(k int) float64 { return counts[k] * math.Max(1+render, 1+counts[k+1]/counts[k]) }
	slow := func(k int) float64 { return 1 + 4*counts[k]/counts[rounds] } // an iteration's time, in units
	starts := make([]float64, rounds+2)                                   // time before round k, in units
	for k := range rounds + 1 {
		starts[k+1] = starts[k] + every*slow(k)
	}
	total := starts[rounds+1] + w.between(0.3, 1.2)*every*float64(rounds)*slow(rounds)
	at := w.between(0.35, 0.95) * starts[rounds] // into the densifications
	oom := 0
	for oom < rounds && starts[oom+1] < at {
		oom++
	}
	most := 0 // the first densification of the largest need
	for k := range rounds {
		if need(k) > need(most) {
			most = k
		}
	}
	for ; oom < most; oom++ {
		record := true
		for j := range oom {
			record = record && need(j) < need(oom)
		}
		if record {
			break
		}
	}
	oom = min(oom, most)
	per := left * w.between(1.01, 1.04) / need(oom) // a blob's state, bytes
	unit := (planned - w.t) / total
	if w.refused(counts[0] * per) {
		return planned
	}
	for k := 0; w.t < s9Limit; k = min(k+1, rounds) {
		it := unit * slow(k)
		for range every {
			if w.climbRefused(counts[k]*per*render*w.between(0.97, 1.03), 0.5, it*w.between(0.95, 1.05)) {
				return planned
			}
		}
		if k == rounds {
			continue // densification has stopped
		}
		if w.refused(counts[k+1] * per) {
			return planned
		}
		w.wait(w.between(0.05, 0.5))
		w.alloc(-counts[k] * per)
	}
	return planned
}

// s9FanoutWidening: a graph neural network trained on a large graph by
// neighbour sampling, for a declared number of epochs, on a schedule that
// samples more neighbours per hop every epoch. Each minibatch gathers the
// features of every node its sampled neighbourhood touches, whose number
// is the product of the hops' fanouts and varies with the seed nodes'
// degrees. In half the runs the caching allocator keeps the largest
// minibatch so far (the level rises only at a new record), in the others
// every minibatch's memory goes back (a sawtooth). Epochs slow down as the
// neighbourhoods widen; the first epoch whose minibatches do not fit ends
// the run.
func s9FanoutWidening(w *s9Work) float64 {
	planned := w.between(1800, 9000)
	room := w.boot()
	w.upload(w.between(0.1, 0.35)*room, w.between(1e9, 4e9)) // the nodes' features
	w.alloc(4 * w.between(0.002, 0.02) * room)               // weights, gradients, two moments
	left := w.left()
	hops := 2 + w.r.IntN(2)
	f0, df := make([]float64, hops), make([]float64, hops)
	for h := range hops {
		f0[h], df[h] = float64(4+w.r.IntN(9)), float64(2+w.r.IntN(5))
	}
	nodes := func(e int) float64 {
		n := 1.0
		for h := range hops {
			n *= f0[h] + float64(e)*df[h]
		}
		return n
	}
	oom := 3 + w.r.IntN(10) // the epoch whose minibatches do not fit
	perNode := left * w.between(1.0, 1.05) / nodes(oom)
	batches := 50 + w.r.IntN(351)
	sigma := w.between(0.03, 0.08)
	caching := w.r.IntN(2) == 0
	epoch := func(e int) float64 { return 0.2 + 0.8*nodes(e)/nodes(oom) }
	upTo := 0.1 * epoch(oom) // the first tenth of the epoch that does not fit
	for e := range oom {
		upTo += epoch(e)
	}
	at, all, epochs := w.between(0.3, 0.75), upTo, oom+1
	for all*at < upTo {
		all += epoch(epochs)
		epochs++
	}
	pause := w.between(1, 10)
	unit := (planned*0.97 - w.t - float64(epochs)*pause) / all
	high := 0.0
	for e := 0; w.t < s9Limit; e++ {
		step := unit * epoch(e) / float64(batches)
		for range batches {
			need := nodes(e) * perNode * w.spread(sigma, 1.15)
			if !caching {
				if w.climbRefused(need, 0.45, step*w.between(0.9, 1.1)) {
					return planned
				}
				continue
			}
			if need > high {
				if w.refused(need - high) {
					return planned
				}
				high = need
			}
			w.wait(step * w.between(0.9, 1.1))
		}
		w.wait(pause * w.between(0.8, 1.2)) // validation and logging
	}
	return planned
}
