package tracegen

import (
	"math"
	"math/rand/v2"

	"github.com/migpro/migpro/predictor/trace"
)

// Rates at which the agent sees a container's memory: the shim reports at
// ShimHz and the NVML poller reads the instance at NVMLHz. The series the
// predictor is fed is max(shim, NVML) at whichever arrives.
const (
	ShimHz = 10.0
	NVMLHz = 1.0
)

// RealFamily is a memory series shaped after what a framework does on the
// GPU, in seconds from the container's start: a CUDA context, then the
// framework's caching-allocator pool as NVML counts it (reserved, not
// allocated, memory). docs/predictor.md cites the framework behaviour each
// one follows.
type RealFamily struct {
	Name string
	// Growing families reach Capacity; OOMAt is the time of the first sample
	// over it in the series returned by Generate (0 for quiet families).
	Growing bool
	// Duration is how long a quiet series runs, in seconds.
	Duration float64
	// used returns the NVML-visible bytes at each 1/ShimHz tick.
	used func(r *rand.Rand, d float64) []float64
}

// RealFamilies lists the framework-shaped families, quiet ones first.
func RealFamilies() []RealFamily {
	return []RealFamily{
		{Name: "vllm-0.90", Duration: 240, used: vllm(0.90, 0.4, 1.2)},
		{Name: "vllm-0.95-slowload", Duration: 240, used: vllm(0.95, 0.06, 0.15)},
		{Name: "hf-generate-staircase", Duration: 300, used: hfGenerate},
		{Name: "torch-pool-warmup", Duration: 240, used: poolWarmup},
		{Name: "training-settle-eval", Duration: 300, used: training(0)},
		{Name: "chunked-load", Duration: 240, used: chunkedLoadOnly},
		{Name: "training-slow-leak", Growing: true, Duration: 1800, used: training(1)},
		{Name: "fast-growth-after-load", Growing: true, Duration: 300, used: fastGrowth},
		{Name: "sawtooth-growth", Growing: true, Duration: 1200, used: sawtoothGrowth},
	}
}

// Generate renders the family for one seed at rate hz (ShimHz or NVMLHz).
// Both rates sample the same underlying run: the NVML series is every
// tenth shim tick, from a seeded phase. A growing series ends at its first
// sample over Capacity; a quiet one stays under it.
func (f RealFamily) Generate(seed uint64, hz float64) trace.Trace {
	r := rand.New(rand.NewPCG(seed, 0x7265616c)) // "real"
	ticks := f.used(r, f.Duration)
	step := max(1, int(math.Round(ShimHz/hz)))
	phase := r.IntN(step)
	c := float64(Capacity)
	tr := trace.Trace{Name: f.Name}
	for i := phase; i < len(ticks); i += step {
		u := ticks[i]
		if !f.Growing {
			u = math.Min(u, c-64*mib)
		}
		tr.Rows = append(tr.Rows, trace.Row{T: float64(i) / ShimHz, Used: uint64(math.Max(u, 0))})
		if u > c {
			break
		}
	}
	return tr
}

// OOM returns the time of the first sample over Capacity, and false when
// the series never exceeds it.
func OOM(tr trace.Trace) (float64, bool) {
	for _, row := range tr.Rows {
		if row.Used > Capacity {
			return row.T, true
		}
	}
	return 0, false
}

// pool is PyTorch's caching allocator as the driver sees it: requests under
// 1 MiB are served from 2 MiB segments, requests up to 10 MiB from 20 MiB
// segments, larger ones from their own segment rounded up to 2 MiB.
// Reserved memory grows by segments and is not returned until
// empty_cache() (release).
type pool struct {
	allocated, reserved float64
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
	}
}

func (p *pool) free(size float64) { p.allocated = math.Max(0, p.allocated-size) }

// release is torch.cuda.empty_cache(): unused segments go back to the driver.
func (p *pool) release() {
	p.reserved = math.Max(p.allocated, math.Ceil(p.allocated/(20*mib))*20*mib)
}

// run drives a pool tick by tick and records context + reserved.
type run struct {
	r     *rand.Rand
	ctx   float64
	p     pool
	ticks []float64
}

func newRun(r *rand.Rand) *run {
	// The CUDA context: 300 to 600 MiB depending on the loaded kernels.
	return &run{r: r, ctx: (300 + 300*r.Float64()) * mib}
}

func (w *run) tick()          { w.ticks = append(w.ticks, w.ctx+w.p.reserved) }
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
	for done := 0.0; done < total; {
		c := math.Min(total-done, (16+384*w.r.Float64())*mib)
		w.p.alloc(c)
		done += c
		w.idle(c / bw)
	}
}

// vllm loads the weights, runs a profiling forward pass whose activations
// spike and are freed (empty_cache), then preallocates the KV cache in one
// call so the pool reaches util × Capacity, and stays flat while serving.
func vllm(util, bwLo, bwHi float64) func(*rand.Rand, float64) []float64 {
	return func(r *rand.Rand, d float64) []float64 {
		w := newRun(r)
		w.idle(1 + 2*r.Float64()) // process and CUDA start
		weights := (2 + 2*r.Float64()) * gib
		w.load(weights, (bwLo+(bwHi-bwLo)*r.Float64())*gib)
		w.idle(0.5 + r.Float64())
		spike := (0.4 + 1.2*r.Float64()) * gib
		for i := 0; i < 10; i++ { // the profiling run's activations, in steps
			w.p.alloc(spike / 10)
			w.idle(0.1 + 0.2*r.Float64())
		}
		w.p.free(spike)
		w.p.release()
		w.idle(0.5 + r.Float64())
		kv := util*float64(Capacity) - w.ctx - w.p.reserved
		w.p.alloc(kv) // one allocation for every KV block
		w.until(d)
		return w.ticks
	}
}

// hfGenerate serves requests with Hugging Face generate: each token appends
// to the KV cache, so a request's memory grows with its length and is freed
// at its end; the pool keeps the segments, so reserved memory climbs a
// staircase of record request lengths and then holds.
func hfGenerate(r *rand.Rand, d float64) []float64 {
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
	return w.ticks
}

// poolWarmup is PyTorch's allocator warming up under a steady workload:
// the first iterations reserve many 2 MiB and 20 MiB segments as the
// working set is first touched, then every request is served from the pool.
func poolWarmup(r *rand.Rand, d float64) []float64 {
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
	return w.ticks
}

// training loads a model, then its first steps reserve gradients, the
// optimizer's two moment buffers and the activations; after that reserved
// memory is flat, except that the first evaluation (a larger batch, no
// gradients) may add a segment. leak > 0 adds tensors kept alive every step
// (a loss history kept on the GPU): slow growth to the OOM.
func training(leak float64) func(*rand.Rand, float64) []float64 {
	return func(r *rand.Rand, d float64) []float64 {
		w := newRun(r)
		w.idle(2 + 3*r.Float64())
		params := (0.6 + 0.6*r.Float64()) * gib
		w.load(params, (0.4+r.Float64())*gib)
		acts := (1 + 1.5*r.Float64()) * gib
		step := 0.5 + r.Float64()
		evalEvery := 40 + 40*r.Float64()
		perStep := leak * (8 + 8*r.Float64()) * mib
		nextEval := w.now() + evalEvery
		for n := 0; w.now() < d; n++ {
			if n == 0 {
				w.p.alloc(params)     // gradients
				w.p.alloc(2 * params) // Adam's exp_avg and exp_avg_sq
			}
			w.p.alloc(acts)
			w.idle(step / 2)
			w.p.free(acts)
			w.p.alloc(perStep)
			w.idle(step / 2)
			if w.now() >= nextEval {
				e := acts * (1.1 + 0.3*r.Float64())
				w.p.alloc(e)
				w.idle(3 + 3*r.Float64())
				w.p.free(e)
				nextEval += evalEvery
			}
		}
		return w.ticks
	}
}

// chunkedLoadOnly loads a large model tensor by tensor and then serves
// without further allocation: a loading ramp and a plateau.
func chunkedLoadOnly(r *rand.Rand, d float64) []float64 {
	w := newRun(r)
	w.idle(1 + 2*r.Float64())
	w.load((4+4*r.Float64())*gib, (0.2+1.3*r.Float64())*gib)
	w.until(d)
	return w.ticks
}

// fastGrowth loads, then grows by 100 to 250 MiB/s: an unbounded cache or a
// batch that keeps doubling its buffers, seconds from the OOM.
func fastGrowth(r *rand.Rand, d float64) []float64 {
	w := newRun(r)
	w.idle(1 + 2*r.Float64())
	w.load((1.5+1.5*r.Float64())*gib, (0.5+r.Float64())*gib)
	rate := (100 + 150*r.Float64()) * mib
	for w.now() < d {
		w.p.alloc(rate / ShimHz * (0.5 + r.Float64()))
		w.tick()
	}
	return w.ticks
}

// sawtoothGrowth is a training step whose activations fill and free every
// step on top of a baseline that grows slowly (the flan-t5 case of the
// thesis: the per-step peak climbs under a sawtooth). Reserved memory is
// what NVML sees; the sawtooth shows because each step releases its
// activations to the driver (expandable segments or empty_cache per step).
func sawtoothGrowth(r *rand.Rand, d float64) []float64 {
	w := newRun(r)
	w.idle(2 + 2*r.Float64())
	w.load((1+r.Float64())*gib, (0.5+r.Float64())*gib)
	acts := (2 + 2*r.Float64()) * gib
	step := 3 + 4*r.Float64()
	leak := (8 + 8*r.Float64()) * mib // per second
	for w.now() < d {
		start := w.now()
		for w.now()-start < step {
			frac := (w.now() - start) / step
			w.p.allocated = w.p.allocated + leak/ShimHz
			w.p.reserved = w.p.allocated + frac*acts
			w.tick()
		}
	}
	return w.ticks
}
