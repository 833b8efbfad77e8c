package tracegen

import (
	"math"
	"slices"
)

// The quiet shapes of the ninth sealed set: each stays under 90% of its
// instance, everything the device adds counted, for its whole planned
// length (declared, for the last two) and must never be marked.
// docs/predictor-sealed9.md says what each one follows.

// s9Pipeline1F1B: one stage of a pipeline-parallel training Job, run with
// a one-forward-one-backward schedule. Each iteration splits the batch into
// microbatches; the stage first runs forwards until it holds as many
// microbatches as there are stages from itself to the last, keeping each
// one's activations for its backward, then alternates one forward and one
// backward, then drains the backwards. The first stage holds the most microbatches at once, the last
// only one. Gradients appear at the first backward (in half the runs they
// are released after every optimizer step), the exchange buffers between
// stages at the first send, and a synchronous checkpoint copies the
// stage's weights now and then. A staircase up, a ripple, a staircase
// down, every iteration, under a fixed ceiling.
func s9Pipeline1F1B(w *s9Work) float64 {
	room := w.boot()
	end := w.t + w.between(1200, 4500)
	stages := 2 + w.r.IntN(7)
	stage := w.r.IntN(stages)
	micro := max(stages, 8+w.r.IntN(57))
	inflight := stages - stage // microbatches the stage holds at its peak
	wts := w.between(0.03, 0.1) * room
	w.upload(wts, w.between(1e9, 4e9))
	w.wait(w.between(1, 8))
	moments := 2.0
	if w.r.IntN(2) == 0 {
		moments = 3 // and a full-precision copy of the weights
	}
	w.alloc(moments * wts)
	keepGrads := w.r.IntN(2) == 0
	p2p := w.between(0.002, 0.01) * room
	free := w.room() - wts - p2p
	wsf := w.between(0.3, 0.8) // a backward's workspace over a microbatch's stash
	stash := w.between(0.35, 0.9) * free / (float64(inflight) + wsf)
	ws := wsf * stash
	f := w.between(0.02, 0.25) // seconds a forward
	b := f * w.between(1.8, 2.4)
	sync := w.between(0.05, 0.6)
	ckptEvery, ckptHold := 100+w.r.IntN(401), w.between(2, 15)
	grads, sent := false, false
	forward := func() {
		w.glide(w.v+stash, f*w.between(0.9, 1.1))
		if !sent {
			w.alloc(p2p)
			sent = true
		}
		w.wait(f * w.between(0, 0.3)) // waiting on the next stage
	}
	backward := func() {
		if !grads {
			w.alloc(wts)
			grads = true
		}
		w.alloc(ws)
		w.glide(w.v-ws-stash, b*w.between(0.9, 1.1))
	}
	for it := 1; w.t < end; it++ {
		w.wait(float64(stage) * f * w.between(0.9, 1.1)) // the first microbatch comes down the pipe
		for range inflight - 1 {
			forward()
		}
		for range micro - inflight + 1 {
			forward()
			backward()
		}
		for range inflight - 1 {
			backward()
		}
		w.wait(sync * w.between(0.3, 0.7)) // the data-parallel gradient exchange
		w.tooth(wts*w.between(0.3, 1), 0.5, sync*w.between(0.3, 0.7))
		if !keepGrads {
			w.alloc(-wts)
			grads = false
		}
		if it%ckptEvery == 0 {
			w.alloc(wts)
			w.wait(ckptHold * w.between(0.8, 1.2))
			w.alloc(-wts)
		}
		w.wait(float64(stages-1-stage) * f * w.between(0.9, 1.1))
	}
	return end
}

// s9AllocatorReclaim: an inference server whose caching allocator is set
// to reclaim: once what it has reserved would pass a threshold, it first
// releases every cached block no batch is using. Batches of varied sizes
// come in busy and calm spells; a batch larger than any before grows the
// cache to fit it, and now and then a batch finds no cached block of the
// right size and reserves another segment, so the reserve climbs in
// irregular steps toward the threshold, falls back to what the running
// batch holds, and climbs again. A rising sawtooth whose teeth last from
// under a minute to many, under a fixed ceiling.
func s9AllocatorReclaim(w *s9Work) float64 {
	room := w.boot()
	end := w.t + w.between(1200, 4500)
	w.upload(w.between(0.1, 0.4)*room, w.between(0.8e9, 3e9))
	w.wait(w.between(2, 20))
	base, avail := w.v, w.room()
	ceiling := w.between(0.45, 0.95) * avail
	largest := w.between(0.15, 0.5) * ceiling
	typical := largest * w.between(0.15, 0.5)
	busy := w.between(1, 15) // batches a second in a busy spell
	calm := busy * w.between(0.05, 0.3)
	spell := w.between(60, 600)
	cycle := w.between(40, 1200) // seconds from a reclaim to the next, busy
	odds := math.Min(0.5, (ceiling-typical)/(cycle*busy*0.7*typical))
	cache, rate, until := 0.0, busy, w.t
	for w.t < end {
		if w.t >= until {
			rate = busy + calm - rate
			until = w.t + w.expo(spell)
		}
		u := math.Min(largest, typical*w.spread(0.6, 5))
		switch {
		case cache < u:
			cache = u
		case w.r.Float64() < odds:
			cache += u * w.between(0.2, 1)
		}
		if cache > ceiling {
			cache = u
		}
		w.level(base + cache)
		w.wait(w.expo(1 / rate))
	}
	return end
}

// s9Query is one traversal of s9GraphQueries: when it starts, the
// frontier at each of its levels, and when each level ends (since start).
type s9Query struct {
	start       float64
	front, ends []float64
}

// s9GraphQueries: a graph analytics service that keeps a large graph on
// the device in compressed rows and answers traversal queries (reachability,
// k-hop neighbourhoods, shortest paths) from a source vertex, a few at a
// time, with no memory pool: each query takes its visited and distance
// arrays and, level by level, builds the next frontier beside the current
// one, then frees the current. Frontiers swell and shrink over a query's
// levels; most queries reach a small part of the graph, a few from hubs
// reach much of it. Edge updates collect in a delta buffer and are merged
// every few minutes into a rebuilt graph, held beside the old one until
// the merge is done. Bumps of every size, from flickers to seconds, and a
// periodic spike, over a flat graph.
func s9GraphQueries(w *s9Work) float64 {
	room := w.boot()
	end := w.t + w.between(1200, 4500)
	graph := w.between(0.12, 0.3) * room
	w.upload(graph, w.between(1.5e9, 6e9))
	w.wait(w.between(1, 10))
	base := w.v
	delta := w.between(0.01, 0.05) // a merge's worth of updates over the graph
	avail := w.room() - graph*(1.06+delta)
	slots := 1 + w.r.IntN(4)
	visited := graph * w.between(0.02, 0.08)
	peak := (w.between(0.5, 0.9)*avail/float64(slots) - visited) / 2
	reach := w.between(0.03, 0.3)
	scan := w.between(1e9, 10e9) // frontier bytes a second
	busy := w.between(0.1, 0.7)
	mean := 7*0.02 + 2.5*peak*reach*1.6/scan
	rate := busy * float64(slots) / mean
	var queries []s9Query
	free := make([]float64, slots)
	for at := w.t + w.expo(1/rate); at < end; at += w.expo(1 / rate) {
		s := slices.Index(free, slices.Min(free))
		q := s9Query{start: math.Max(at, free[s])}
		depth, width := 4+w.r.IntN(7), w.between(0.6, 1.5)
		top := w.between(1.5, float64(depth)-1.5)
		far := math.Min(1, reach*w.spread(1, 20))
		sum := 0.0
		for l := range depth {
			fr := peak * far * math.Exp(-(float64(l)-top)*(float64(l)-top)/(2*width*width))
			q.front = append(q.front, fr)
			sum += 0.02 + fr/scan
			q.ends = append(q.ends, sum)
		}
		free[s] = q.start + sum
		queries = append(queries, q)
	}
	merges := w.between(120, 900)
	first, size, last, next := 0, graph, w.t, w.t+merges
	held := func(t float64) float64 { // what the running queries hold at t
		v := 0.0
		for _, q := range queries[first:] {
			if q.start > t {
				break
			}
			x, l := t-q.start, 0
			for l < len(q.ends) && q.ends[l] <= x {
				l++
			}
			if l == len(q.ends) {
				continue
			}
			from := 0.0
			if l > 0 {
				from = q.ends[l-1]
			}
			v += visited + q.front[l]
			if l+1 < len(q.front) {
				v += q.front[l+1] * (x - from) / (q.ends[l] - from)
			}
		}
		return v
	}
	for w.t < end {
		for first < len(queries) && queries[first].start+queries[first].ends[len(queries[first].ends)-1] < w.t {
			first++
		}
		t0, old, kept := w.t, base-graph+size, graph*delta*math.Min(1, (w.t-last)/merges)
		if w.t < next {
			from := last
			w.write(math.Min(next, w.t+5), func(t float64) float64 {
				return old + graph*delta*math.Min(1, (t-from)/merges) + held(t)
			})
			continue
		}
		build := w.between(2, 20)
		size = graph * (1 + math.Max(-0.03, math.Min(0.03, 0.01*w.r.NormFloat64())))
		made := size
		w.write(t0+build, func(t float64) float64 { return old + kept + made*(t-t0)/build + held(t) })
		last, next = w.t, w.t+merges*w.between(0.8, 1.2)
	}
	w.level(base - graph + size)
	return end
}

// s9SelfPlayLeague: a reinforcement learning Job that trains by self-play
// against a league of its own past policies, kept on the device for the
// actors to play against. Every so many iterations the current policy is
// copied into the league; once the league holds its cap, the oldest
// snapshot is dropped after the new one is in. Each iteration is a
// rollout (the actors' inference buffers) then an update (a few
// optimizer steps' activations). A regular staircase that stops at the cap
// partway through the run, and stays with a blip at every snapshot.
func s9SelfPlayLeague(w *s9Work) float64 {
	room := w.boot()
	end := w.t + w.between(1200, 4500)
	capacity := 4 + w.r.IntN(21)
	half := 1.0
	if w.r.IntN(2) == 0 {
		half = 0.5 // snapshots kept in half precision
	}
	budget := w.between(0.45, 0.9) * room
	upd := w.between(0.1, 0.35) * budget
	roll := w.between(0.03, 0.15) * budget
	policy := (budget - math.Max(upd, roll)) / (4 + float64(capacity+1)*half)
	w.upload(policy, w.between(1e9, 3e9))
	w.alloc(3 * policy) // gradients and two moments
	rollout, steps, step := w.between(2, 20), 3+w.r.IntN(28), w.between(0.2, 1.5)
	iter := rollout + float64(steps)*step
	every := max(1, int(math.Round(w.between(0.2, 0.7)*(end-w.t)/(float64(capacity)*iter))))
	league := 0
	for it := 0; w.t < end; it++ {
		if it%every == 0 {
			w.alloc(half * policy)
			w.wait(w.between(0.05, 0.5))
			if league == capacity {
				w.wait(w.between(0.1, 1))
				w.alloc(-half * policy)
			} else {
				league++
			}
		}
		buffers := roll * w.between(0.9, 1)
		w.alloc(buffers)
		w.wait(rollout * w.between(0.8, 1.2))
		w.alloc(-buffers)
		for range steps {
			w.tooth(upd*w.between(0.95, 1), 0.4, step*w.between(0.9, 1.1))
		}
	}
	return end
}

// s9FoldByLength: a batch structure-prediction Job that declares its
// length and folds a list of protein chains sorted by length, shortest
// first, to cut padding. Each chain's alignment features are copied up
// (in proportion to its length), its pair representation is taken (in
// proportion to the square of its length), the trunk runs a few recycles,
// each building and freeing its activations, then the structure module
// runs and everything of the chain is freed. The longest chain was
// admitted because it fits this instance. Teeth whose height grows with
// the square of the length, chain after chain, up to the last, near the
// end of the run.
func s9FoldByLength(w *s9Work) float64 {
	planned := w.between(1800, 7200)
	room := w.boot()
	w.upload(w.between(0.03, 0.1)*room, w.between(1e9, 3e9)) // the weights
	budget := w.between(0.55, 0.9) * w.room()
	msa := w.between(0.03, 0.15) * budget // the longest chain's features
	act := w.between(0.5, 2)              // the trunk's activations over the pair representation
	pair := (budget - msa) / (1 + act)
	n := 15 + w.r.IntN(106)
	xs := make([]float64, n)
	sigma := w.between(0.3, 0.6)
	for i := range xs {
		xs[i] = w.spread(sigma, 5)
	}
	slices.Sort(xs)
	top := xs[n-1]
	bps, gap := w.between(3e9, 10e9), w.between(0.3, 3)
	over, weight := 0.0, 0.0
	for i, x := range xs {
		xs[i] = math.Max(0.1, x/top)
		over += msa*xs[i]/bps + gap
		weight += 0.15 + math.Pow(xs[i], 2.5)
	}
	unit := (planned*w.between(0.85, 0.93) - w.t - over) / weight
	for _, x := range xs {
		sec := unit * (0.15 + math.Pow(x, 2.5)) * w.between(0.9, 1.1)
		base := w.v
		w.upload(msa*x, bps)
		w.alloc(pair * x * x)
		recycles := 3 + w.r.IntN(6)
		for range recycles {
			w.tooth(act*pair*x*x*w.between(0.9, 1), 0.6, 0.8*sec/float64(recycles))
		}
		w.tooth(0.1*pair*x*x, 0.5, 0.15*sec)
		w.level(base)
		w.wait(gap * w.between(0.8, 1.2))
	}
	w.wait(planned - w.t)
	return planned
}

// s9KFoldBestCopy: a training Job that declares its length and runs k-fold
// cross-validation in one process, the folds one after another on a
// dataset kept on the device. Within a fold, every validation that
// improves on the best so far deep-copies the model's weights on the
// device (the new copy is made before the old one is dropped); at the
// fold's end the model, its gradients and optimizer state are freed, but
// the fold's best copy is kept for the ensemble that predicts the test set
// at the end. Improvements come often early in a fold and rarely later. A
// training sawtooth whose base steps up by a model's weights every fold.
func s9KFoldBestCopy(w *s9Work) float64 {
	planned := w.between(1800, 7200)
	room := w.boot()
	w.upload(w.between(0.02, 0.15)*room, w.between(1e9, 4e9)) // the dataset
	folds := 3 + w.r.IntN(8)
	budget := w.between(0.5, 0.9) * w.room()
	acts := w.between(0.1, 0.4) * budget
	m := (budget - acts) / float64(folds+5)
	valShare := w.between(0.2, 0.5) // validation activations over training's
	final := w.between(60, 300)     // the ensemble's prediction of the test set
	bps := w.between(1e9, 4e9)
	per := (planned*w.between(0.88, 0.94) - w.t - final) / float64(folds)
	step := w.between(0.1, 1.5)
	for range folds {
		foldEnd := w.t + per
		epochs := 5 + w.r.IntN(56)
		each := (per - m/bps - 2) / float64(epochs)
		settle := w.between(1, 8) // epochs over which improvements thin out
		w.upload(m, bps)
		w.tooth(acts*w.between(0.95, 1), 0.4, step)
		w.alloc(3 * m) // gradients, then two moments at the first optimizer step
		best := false
		for e := range epochs {
			val := each * w.between(0.03, 0.1)
			for stop := w.t + each - val; w.t < stop; {
				w.tooth(acts*w.between(0.95, 1), 0.4, step*w.between(0.9, 1.1))
			}
			for stop := w.t + val; w.t < stop; {
				w.tooth(valShare*acts*w.between(0.95, 1), 0.5, 0.5*step*w.between(0.9, 1.1))
			}
			if e == 0 || w.r.Float64() < 1/(1+float64(e)/settle) {
				w.alloc(m)
				w.wait(w.between(0.1, 0.6))
				if best {
					w.alloc(-m)
				}
				best = true
			}
		}
		w.alloc(-4 * m)
		w.wait(math.Max(0, foldEnd-w.t))
	}
	for stop := w.t + final; w.t < stop; {
		w.tooth(acts*w.between(0.2, 0.5), 0.5, step*w.between(0.9, 1.1))
	}
	w.wait(planned - w.t)
	return planned
}
