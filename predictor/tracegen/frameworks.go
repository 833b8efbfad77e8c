package tracegen

import (
	"math"
	"math/rand/v2"
)

// pool is PyTorch's caching allocator as the driver sees it: requests under
// 1 MiB are served from 2 MiB segments, requests up to 10 MiB from 20 MiB
// segments, larger ones from their own segment rounded up to 2 MiB.
// Reserved memory grows by segments and is not returned until
// empty_cache() (release). calls counts the segments reserved, each one
// driver allocation call: what the shim counts.
type pool struct {
	allocated, reserved float64
	calls               float64
}

func segment(size float64) float64 {
	switch {
	case size < mib:
		return 2 * mib
	case size <= 10*mib:
		return 20 * mib
	}
	return math.Ceil(size/(2*mib)) * 2 * mib
}

func (p *pool) alloc(size float64) {
	p.allocated += size
	for p.allocated > p.reserved {
		p.reserved += segment(size)
		p.calls++
	}
}

func (p *pool) free(size float64) { p.allocated = math.Max(0, p.allocated-size) }

// release is torch.cuda.empty_cache(): unused segments go back to the driver.
func (p *pool) release() {
	p.reserved = math.Max(p.allocated, math.Ceil(p.allocated/(20*mib))*20*mib)
}

// run drives a pool tick by tick and records its reserved bytes; the
// context is returned beside them. kept is a second pool for small tensors
// kept alive across steps: they come from their own 2 MiB and 20 MiB
// segments, not from the blocks the large activations free.
type run struct {
	r     *rand.Rand
	ctx   float64
	p     pool
	kept  pool
	ticks []float64
	calls []float64 // driver allocation calls so far, at each tick
}

func (w *run) done() series { return series{ctx: w.ctx, pool: w.ticks, calls: w.calls} }

func newRun(r *rand.Rand) *run {
	// The CUDA context: 300 to 600 MiB depending on the loaded kernels.
	return &run{r: r, ctx: (300 + 300*r.Float64()) * mib}
}

func (w *run) tick() {
	w.ticks = append(w.ticks, w.p.reserved+w.kept.reserved)
	w.calls = append(w.calls, w.p.calls+w.kept.calls)
}
func (w *run) now() float64   { return float64(len(w.ticks)) / ShimHz }
func (w *run) idle(s float64) { w.until(w.now() + s) }
func (w *run) until(t float64) {
	for w.now() < t {
		w.tick()
	}
}

// load copies weights of total bytes tensor by tensor at bw bytes/s:
// chunked copies of 16 to 400 MiB, each one allocation.
func (w *run) load(total, bw float64) {
	if bw <= 0 {
		return
	}
	for done := 0.0; done < total; {
		c := math.Min(total-done, (16+384*w.r.Float64())*mib)
		w.p.alloc(c)
		done += c
		w.idle(c / bw)
	}
}

// loadSpeed draws a load's bandwidth in bytes/s for weights of total bytes:
// uniform in [lo, hi] GiB/s, or, when secs is set, whatever finishes in a
// uniform [lo, hi] seconds.
type loadSpeed struct {
	lo, hi float64
	secs   bool
}

func gibps(lo, hi float64) loadSpeed   { return loadSpeed{lo: lo, hi: hi} }
func seconds(lo, hi float64) loadSpeed { return loadSpeed{lo: lo, hi: hi, secs: true} }

func (s loadSpeed) draw(r *rand.Rand, total float64) float64 {
	v := s.lo + (s.hi-s.lo)*r.Float64()
	if s.secs {
		return total / v
	}
	return v * gib
}

// vllm loads the weights, runs a profiling forward pass whose activations
// spike and are freed (empty_cache), then preallocates the KV cache in one
// call so the pool reaches util × Capacity, and stays flat while serving.
func vllm(util float64, speed loadSpeed) func(*rand.Rand, float64) series {
	return func(r *rand.Rand, d float64) series {
		w := newRun(r)
		w.idle(1 + 2*r.Float64()) // process and CUDA start
		weights := (2 + 2*r.Float64()) * gib
		w.load(weights, speed.draw(r, weights))
		w.idle(0.5 + r.Float64())
		spike := (0.4 + 1.2*r.Float64()) * gib
		for range 10 { // the profiling run's activations, in steps
			w.p.alloc(spike / 10)
			w.idle(0.1 + 0.2*r.Float64())
		}
		w.p.free(spike)
		w.p.release()
		w.idle(0.5 + r.Float64())
		kv := util*float64(Capacity) - w.ctx - w.p.reserved
		w.p.alloc(kv) // one allocation for every KV block
		w.until(d)
		return w.done()
	}
}

// hfGenerate serves requests with Hugging Face generate: each token appends
// to the KV cache, so a request's memory grows with its length and is freed
// at its end; the pool keeps the segments, so reserved memory climbs a
// staircase of record request lengths and then holds.
func hfGenerate(r *rand.Rand, d float64) series {
	w := newRun(r)
	w.idle(1 + 2*r.Float64())
	w.load((2+1.5*r.Float64())*gib, (0.3+r.Float64())*gib)
	perToken := (0.3 + 0.3*r.Float64()) * mib // all layers' K and V for one token
	for w.now() < d {
		tokens := 64 + r.IntN(1+int(1500*math.Pow(r.Float64(), 3)))
		held := 0.0
		for i := 0; i < tokens && w.now() < d; i += 8 {
			// The cache is re-concatenated every step: a new tensor of the
			// grown size, the old one freed.
			grown := float64(i+8) * perToken
			w.p.alloc(grown)
			w.p.free(held)
			held = grown
			w.idle(0.25) // 8 tokens at 32 tokens/s
		}
		w.p.free(held)
		w.idle(0.5 + 3*r.Float64())
	}
	return w.done()
}

// poolWarmup is PyTorch's allocator warming up under a steady workload:
// the first iterations reserve many 2 MiB and 20 MiB segments as the
// working set is first touched, then every request is served from the pool.
func poolWarmup(r *rand.Rand, d float64) series {
	w := newRun(r)
	w.idle(1 + 2*r.Float64())
	w.load((1+2*r.Float64())*gib, (0.5+r.Float64())*gib)
	working := (2 + 3*r.Float64()) * gib
	iter := 0.2 + 0.4*r.Float64()
	for w.now() < d {
		var held float64
		// One iteration: small and mid-sized temporaries, all freed at its end.
		for held < working {
			s := mib * 0.5
			if r.Float64() < 0.5 {
				s = 4 * mib
			}
			if r.Float64() < 0.1 {
				s = 64 * mib
			}
			w.p.alloc(s)
			held += s
		}
		w.p.free(held)
		w.idle(iter)
	}
	return w.done()
}

// trainingSettle loads a model, then its first step reserves gradients, the
// optimizer's two moment buffers and the activations; after that reserved
// memory is flat, except that the first evaluation (a larger batch, no
// gradients) may add a segment once.
func trainingSettle(r *rand.Rand, d float64) series {
	w := newRun(r)
	w.idle(2 + 3*r.Float64())
	params := (0.6 + 0.6*r.Float64()) * gib
	w.load(params, (0.4+r.Float64())*gib)
	acts := (1 + 1.5*r.Float64()) * gib
	step := 0.5 + r.Float64()
	evalEvery := 40 + 40*r.Float64()
	nextEval := w.now() + evalEvery
	for n := 0; w.now() < d; n++ {
		if n == 0 {
			w.p.alloc(params)     // gradients
			w.p.alloc(2 * params) // Adam's exp_avg and exp_avg_sq
		}
		w.p.alloc(acts)
		w.idle(step)
		w.p.free(acts)
		if w.now() >= nextEval {
			e := acts * (1.1 + 0.3*r.Float64())
			w.p.alloc(e)
			w.idle(3 + 3*r.Float64())
			w.p.free(e)
			nextEval += evalEvery
		}
	}
	return w.done()
}

// trainingLeak is trainingSettle with a slow leak: every step keeps a 4 to
// 10 MiB tensor alive (per-step outputs or a loss history kept on the GPU
// with its graph). The kept tensors come from 20 MiB segments of their own,
// so reserved memory rises by one segment every few steps, 2.7 to 20 MiB/s,
// and the run reaches the OOM within its Duration. Its evaluation uses a
// smaller batch than training (no gradients), so it adds no segment.
func trainingLeak(r *rand.Rand, d float64) series {
	w := newRun(r)
	w.idle(2 + 3*r.Float64())
	params := (0.5 + 0.5*r.Float64()) * gib
	w.load(params, (0.4+r.Float64())*gib)
	acts := (1 + r.Float64()) * gib
	step := 0.5 + r.Float64()
	evalEvery := 40 + 40*r.Float64()
	leak := (4 + 6*r.Float64()) * mib
	nextEval := w.now() + evalEvery
	for n := 0; w.now() < d; n++ {
		if n == 0 {
			w.p.alloc(3 * params) // gradients, exp_avg, exp_avg_sq
		}
		w.p.alloc(acts)
		w.idle(step)
		w.p.free(acts)
		w.kept.alloc(leak)
		if w.now() >= nextEval {
			e := acts * (0.6 + 0.3*r.Float64())
			w.p.alloc(e)
			w.idle(3 + 3*r.Float64())
			w.p.free(e)
			nextEval += evalEvery
		}
	}
	return w.done()
}

// chunked loads a model of lo to hi GiB tensor by tensor and then serves
// without further allocation: a loading ramp and a plateau.
func chunked(lo, hi float64, speed loadSpeed) func(*rand.Rand, float64) series {
	return func(r *rand.Rand, d float64) series {
		w := newRun(r)
		w.idle(1 + 2*r.Float64())
		total := (lo + (hi-lo)*r.Float64()) * gib
		w.load(total, speed.draw(r, total))
		w.until(d)
		return w.done()
	}
}

// fastGrowth loads, then grows by lo to hi MiB/s: an unbounded cache or a
// batch that keeps doubling its buffers, seconds from the OOM.
func fastGrowth(lo, hi float64) func(*rand.Rand, float64) series {
	return func(r *rand.Rand, d float64) series {
		w := newRun(r)
		w.idle(1 + 2*r.Float64())
		w.load((1.5+1.5*r.Float64())*gib, (0.5+r.Float64())*gib)
		rate := (lo + (hi-lo)*r.Float64()) * mib
		for w.now() < d {
			w.p.alloc(rate / ShimHz * (0.5 + r.Float64()))
			w.tick()
		}
		return w.done()
	}
}

// sawtoothOn is a training step whose activations fill and free every step on
// top of a base that grows (the flan-t5 case: the per-step peak
// climbs under a sawtooth). Reserved memory is what NVML sees; the sawtooth
// shows because each step releases its activations to the driver
// (expandable segments, or empty_cache every step).
func sawtoothOn(w *run, acts, step, perSec, d float64) {
	for w.now() < d {
		start := w.now()
		for w.now()-start < step {
			frac := (w.now() - start) / step
			w.p.allocated += perSec / ShimHz
			grown := w.p.allocated + frac*acts
			if grown > w.p.reserved {
				w.p.calls += math.Ceil((grown - w.p.reserved) / (20 * mib)) // one 20 MiB page a call
			}
			w.p.reserved = grown
			w.tick()
		}
	}
}

func sawtoothGrowth(r *rand.Rand, d float64) series {
	w := newRun(r)
	w.idle(2 + 2*r.Float64())
	w.load((1+r.Float64())*gib, (0.5+r.Float64())*gib)
	sawtoothOn(w, (2+2*r.Float64())*gib, 3+4*r.Float64(), (8+8*r.Float64())*mib, d)
	return w.done()
}

// flanT5 is a flan-t5 training run in FlanT5Steps steps of 8 to
// 12 s: weights and optimizer states, then a per-step sawtooth of 2 to 3 GiB
// of activations on a base that grows by the same amount every step, so
// that the peak of the last step is the first over Capacity.
func flanT5(r *rand.Rand, d float64) series {
	w := newRun(r)
	w.idle(2 + 2*r.Float64())
	w.load((0.8+0.4*r.Float64())*gib, (0.5+r.Float64())*gib)
	w.p.alloc(2 * w.p.allocated) // Adam's moments at the first step
	acts := (2 + r.Float64()) * gib
	step := 8 + 4*r.Float64()
	// The base grows by perStep a step: the peak of step 26 stays under
	// Capacity and step 27 crosses it near the end of its forward pass.
	top := float64(Capacity) - w.ctx - w.p.allocated - acts
	perStep := top / (FlanT5Steps - 1 + 0.5)
	sawtoothOn(w, acts, step, perStep/step, d)
	return w.done()
}

// FlanT5Steps is the flan-t5 run's length in training steps.
const FlanT5Steps = 27
