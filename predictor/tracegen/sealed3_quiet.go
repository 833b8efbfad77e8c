package tracegen

import "math"

// The quiet shapes of the third sealed set: each stays under 92% of its
// instance and must never be marked. Levels are shares of the room that
// boot returns; docs/predictor-sealed3.md says what each one follows.

// s3FinetuneAdapters: a fine-tuning Job that declares its length. It loads
// a base model in shards, then small adapters; the first step reserves the
// activations, the adapters' gradients and then their optimiser state;
// from then on the steps reuse the cache, and a checkpoint every few
// minutes stages the adapters in a short-lived buffer.
func s3FinetuneAdapters(l *s3Levels) float64 {
	room := l.boot()
	planned := l.uniform(600, 3000)
	l.load(l.uniform(0.25, 0.55)*room, l.uniform(0.8, 3)*1e9, 2+l.r.IntN(7))
	l.idle(l.uniform(2, 15))
	adapters := l.uniform(0.005, 0.03) * room
	l.set(l.at + adapters)
	l.idle(l.uniform(1, 10))
	l.move(l.at+l.uniform(0.1, 0.28)*room, l.uniform(0.5, 3))
	l.set(l.at + adapters)
	l.idle(l.uniform(0.1, 1))
	l.set(l.at + 2*adapters)
	every := l.uniform(120, 600)
	for l.clock()+every < planned {
		l.idle(every)
		flat := l.at
		l.set(flat + adapters*l.uniform(0.5, 1))
		l.idle(l.uniform(0.3, 4))
		l.set(flat)
	}
	return planned
}

// s3CollectiveBuffers: a data-parallel training Job that declares its
// length. The weights and the first steps' activations come first; the
// communication library allocates its buffers at the first gradient
// exchange, seconds later, in a few chunks; the gradient buckets are
// rebuilt once after the first steps, which adds a little more.
func s3CollectiveBuffers(l *s3Levels) float64 {
	room := l.boot()
	planned := l.uniform(900, 3600)
	l.load(l.uniform(0.15, 0.45)*room, l.uniform(1, 4)*1e9, 1+l.r.IntN(4))
	l.idle(l.uniform(1, 10))
	l.set(l.at + l.uniform(0.1, 0.25)*room)
	l.idle(l.uniform(3, 40))
	comm := l.uniform(0.03, 0.12) * room
	n := 2 + l.r.IntN(5)
	for range n {
		l.set(l.at + comm/float64(n))
		l.idle(l.uniform(0.1, 0.6))
	}
	l.idle(l.uniform(5, 60))
	l.set(l.at + l.uniform(0.01, 0.05)*room)
	return planned
}

// s3CheckpointSawtooth: training with activation checkpointing that gives
// its activations back at the end of every step. The forward pass keeps
// one checkpoint per segment, the backward pass recomputes each segment
// (a brief spike) and frees it, so every step is a bounded tooth, of about
// the same height, over a flat base of weights and optimiser state.
func s3CheckpointSawtooth(l *s3Levels) float64 {
	room := l.boot()
	planned := l.uniform(600, 2400)
	l.load(l.uniform(0.2, 0.45)*room, l.uniform(1, 3)*1e9, 1+l.r.IntN(3))
	base := l.at
	amp := l.uniform(0.1, 0.4) * room
	period := l.uniform(1.5, 8)
	segs := 4 + l.r.IntN(13)
	for l.clock() < planned {
		tooth := amp * l.uniform(0.93, 1.05)
		l.move(base+0.6*tooth, 0.45*period)
		for k := segs; k > 0; k-- {
			l.set(base + 0.6*tooth*float64(k)/float64(segs) + 0.4*tooth*l.uniform(0.7, 1))
			l.idle(0.5 * period / float64(segs))
		}
		l.set(base)
		l.idle(0.05 * period)
	}
	return planned
}

// s3EvalTwoBatches: an evaluation Job that declares its length and
// alternates between two datasets run at two batch sizes, emptying the
// allocator's cache when it switches, so the level steps between two
// plateaus for as long as it runs.
func s3EvalTwoBatches(l *s3Levels) float64 {
	room := l.boot()
	planned := l.uniform(600, 2400)
	w := l.uniform(0.2, 0.5) * room
	l.load(w, l.uniform(1, 4)*1e9, 1+l.r.IntN(3))
	base := l.at
	small := l.uniform(0.03, 0.15) * room
	large := small + l.uniform(0.1, 1)*(room-w-small)
	for l.clock() < planned {
		for _, act := range []float64{small, large} {
			for n := 1 + l.r.IntN(3); n > 0; n-- {
				l.set(l.at + (base+act-l.at)/float64(n))
				l.idle(l.uniform(0.05, 0.5))
			}
			l.idle(l.uniform(10, 90))
			l.set(base)
			l.idle(l.uniform(0.5, 5))
		}
	}
	return planned
}

// s3SpeculativeDraft: a server that decodes with a draft model: the main
// model and its key-value cache come first, the draft model and its own
// smaller cache are loaded a while later, then a handful of captured
// decode graphs; flat after that.
func s3SpeculativeDraft(l *s3Levels) float64 {
	room := l.boot()
	bps := l.uniform(0.8, 4) * 1e9
	l.load(l.uniform(0.3, 0.45)*room, bps, 2+l.r.IntN(6))
	l.idle(l.uniform(0.5, 5))
	l.set(l.at + l.uniform(0.1, 0.25)*room)
	l.idle(l.uniform(3, 60))
	l.load(l.uniform(0.03, 0.1)*room, bps, 1)
	l.idle(l.uniform(0.2, 3))
	l.set(l.at + l.uniform(0.02, 0.06)*room)
	for n := 3 + l.r.IntN(10); n > 0; n-- {
		l.idle(l.uniform(0.1, 0.5))
		l.set(l.at + l.uniform(5e6, 40e6))
	}
	return l.uniform(300, 1200)
}

// s3NotebookCells: an interactive notebook. A user runs a cell every few
// minutes; each builds something bounded on the device (a batch, a
// temporary model), holds it while the cell runs, and frees nearly all of
// it when done; a little stays referenced from the notebook's variables.
func s3NotebookCells(l *s3Levels) float64 {
	room := l.boot()
	planned := l.uniform(900, 2700)
	l.load(l.uniform(0.05, 0.3)*room, l.uniform(0.5, 2)*1e9, 1)
	limit := l.at + room
	for l.clock() < planned {
		l.idle(l.uniform(20, 240))
		base := l.at
		peak := base + l.uniform(0.1, 0.8)*(limit-base)
		if l.r.IntN(2) == 0 {
			l.move(peak, l.uniform(0.5, 10))
		} else {
			for n := 2 + l.r.IntN(6); n > 0; n-- {
				l.set(l.at + (peak-l.at)/float64(n))
				l.idle(l.uniform(0.2, 3))
			}
		}
		l.idle(l.uniform(1, 30))
		l.set(base + math.Min(l.uniform(0, 0.01)*room, 0.5*(limit-base)))
	}
	return planned
}

// s3HalfCast: a model loaded in full precision and cast to half precision
// on the device: either all at once (both copies held, then the full one
// freed) or layer by layer (each layer's half copy made, then its full copy
// freed); then a warm-up inference reserves its activations.
func s3HalfCast(l *s3Levels) float64 {
	room := l.boot()
	w := l.uniform(0.2, 0.6) * room
	l.load(w, l.uniform(0.8, 3)*1e9, 1+l.r.IntN(4))
	l.idle(l.uniform(0.3, 5))
	if l.r.IntN(2) == 0 {
		l.move(l.at+w/2, l.uniform(0.5, 4))
		l.idle(l.uniform(0.1, 1))
		l.set(l.at - w)
	} else {
		n := 8 + l.r.IntN(40)
		for range n {
			l.set(l.at + w/2/float64(n))
			l.idle(l.uniform(0.05, 0.3))
			l.set(l.at - w/float64(n))
		}
	}
	l.idle(l.uniform(1, 10))
	l.move(l.at+l.uniform(0.05, 0.3)*room, l.uniform(0.3, 2))
	return l.uniform(300, 900)
}

// s3GraphCapture: a batch inference server that, once its weights and
// key-value pool are in, captures a replayable graph for each batch size
// it supports, the largest first; each capture keeps a private memory pool
// smaller than the last, so the rise decelerates and stops.
func s3GraphCapture(l *s3Levels) float64 {
	room := l.boot()
	l.load(l.uniform(0.2, 0.5)*room, l.uniform(1, 4)*1e9, 1+l.r.IntN(6))
	l.idle(l.uniform(0.5, 5))
	l.set(l.at + l.uniform(0.1, 0.3)*room)
	l.idle(l.uniform(0.5, 3))
	n, decay := 10+l.r.IntN(31), l.uniform(0.85, 0.95)
	step := l.uniform(0.03, 0.15) * room * (1 - decay) / (1 - math.Pow(decay, float64(n)))
	for ; n > 0; n-- {
		l.idle(l.uniform(0.05, 0.6))
		l.set(l.at + step)
		step *= decay
	}
	return l.uniform(300, 1200)
}
