package tracegen

import (
	"math"
	"math/rand/v2"
)

// SealedSeed0 is where the sealed shapes' seeds start, far from the tuned
// (0) and held-out (1 000 000) shapes' seeds; shape i starts at
// SealedSeed0 + i*10 000.
const SealedSeed0 = 900_000

// SealedShapes are issue 29's shapes written a second time, from the
// issue's descriptions only, with generator code of their own (this file
// calls none of the tuned shapes' generators) and parameters drawn per seed
// from ranges around each description. They add the noise a real series
// carries: a CUDA context some time after the start, allocator rounding and
// a small NVML jitter. They are sealed: the predictor is not tuned on them
// and their results are read only to report them (TestSealedShapes,
// docs/predictor-results.md, "Sealed held-out shapes").
func SealedShapes() []Shape {
	shapes := []Shape{
		{Name: "sealed-serving-warmup", Duration: 360, gen: sealedServing},
		{Name: "sealed-vllm-start", Duration: 300, gen: sealedVLLM},
		{Name: "sealed-training-loop", Duration: 600, gen: sealedTraining},
		{Name: "sealed-model-server", Duration: 420, gen: sealedModelServer},
		{Name: "sealed-kv-cache", Growing: true, Duration: 400, gen: sealedKVCache},
		{Name: "sealed-fast-growth", Growing: true, Duration: 150, gen: sealedFastGrowth},
		{Name: "sealed-leak-horizon", Growing: true, WithHorizon: true, Duration: 3600, gen: sealedLeak},
		{Name: "sealed-pause-resume", Growing: true, Duration: 600, gen: sealedPauseResume},
	}
	for i := range shapes {
		shapes[i].Seed0 = SealedSeed0 + uint64(i)*10_000
	}
	return shapes
}

// sealedCap is ShapeCapacity as a float, in bytes.
const sealedCap = float64(ShapeCapacity)

// between draws uniformly from [lo, hi].
func between(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// sealed builds one run tick by tick (1/ShimHz s each): v is the memory the
// process holds now, in bytes, before rounding and jitter.
type sealed struct {
	r   *rand.Rand
	v   float64
	out []float64
}

func (s *sealed) now() float64 { return float64(len(s.out)) / ShimHz }

// stay holds the level for sec seconds (at least one tick when sec > 0).
func (s *sealed) stay(sec float64) {
	for n := int(math.Ceil(sec*ShimHz - 1e-9)); n > 0; n-- {
		s.out = append(s.out, s.v)
	}
}

// rampTo moves the level to to at rate bytes a second, one tick at a time.
func (s *sealed) rampTo(to, rate float64) {
	per := rate / ShimHz
	for math.Abs(to-s.v) > per {
		s.v += math.Copysign(per, to-s.v)
		s.out = append(s.out, s.v)
	}
	s.v = to
	s.out = append(s.out, s.v)
}

// stepTo reaches to in 1 to 3 ticks: one reservation, as NVML sees it.
func (s *sealed) stepTo(to float64) {
	n := 1 + s.r.IntN(3)
	from := s.v
	for i := 1; i <= n; i++ {
		s.v = from + (to-from)*float64(i)/float64(n)
		s.out = append(s.out, s.v)
	}
}

// boot is the container's start: nothing on the GPU until the process
// initialises CUDA, then its context, then a short settle.
func (s *sealed) boot() {
	s.stay(between(s.r, 0.3, 2.5))
	s.v = between(s.r, 0.3, 0.6) * gb
	s.stay(between(s.r, 0.3, 2))
}

// growUntilOOM runs step (which moves the level up) until the level is over
// the capacity or the run reaches d.
func (s *sealed) growUntilOOM(d float64, step func()) {
	for s.v <= sealedCap && s.now() < d {
		step()
	}
}

// done pads or cuts the run to d seconds, then rounds every
// non-zero tick up to the run's allocator granule and adds NVML jitter.
func (s *sealed) done(d float64) []float64 {
	s.stay(d - s.now())
	s.out = s.out[:int(math.Round(d*ShimHz))]
	granule := []float64{2 << 20, 20 << 20, 64 << 20}[s.r.IntN(3)]
	jitter := between(s.r, 0, 4e6)
	for i, u := range s.out {
		if u <= 0 {
			continue
		}
		s.out[i] = math.Ceil(u/granule)*granule + between(s.r, -jitter, jitter)
	}
	return s.out
}

func newSealed(r *rand.Rand) *sealed { return &sealed{r: r} }

// sealedServing: weights of about 3.5 GB in about 6 s, then batch sizes
// tried one after another, each reserving about 0.45 GB held 2-6 s, up to
// about 75 % of the instance; then serving, flat, for minutes.
func sealedServing(r *rand.Rand, d float64) []float64 {
	s := newSealed(r)
	s.boot()
	load := between(r, 3.1, 3.9) * gb
	s.rampTo(s.v+load, load/between(r, 4.5, 7.5))
	s.stay(between(r, 0.2, 3))
	top := between(r, 0.70, 0.79) * sealedCap
	step := between(r, 0.38, 0.52) * gb
	lo, hi := between(r, 1.8, 2.6), between(r, 5, 6.5)
	for {
		next := s.v + step*between(r, 0.9, 1.1)
		if next > top {
			break
		}
		s.stepTo(next)
		s.stay(between(r, lo, hi))
	}
	return s.done(d)
}

// sealedVLLM: weights at about 0.28 GB/s for about 20 s to about 60 %, a
// profiling pass whose activations are freed, then the KV cache reserved in
// one step to about 95 %, then flat.
func sealedVLLM(r *rand.Rand, d float64) []float64 {
	s := newSealed(r)
	s.boot()
	to := between(r, 0.55, 0.65) * sealedCap
	rate := between(r, 0.23, 0.33) * gb
	for s.v < to { // shard by shard, each at its own speed around the mean
		shard := math.Min(to-s.v, between(r, 0.3, 1.2)*gb)
		s.rampTo(s.v+shard, rate*between(r, 0.8, 1.2))
	}
	s.stay(between(r, 0.5, 3))
	weights := s.v
	s.rampTo(weights+between(r, 0.3, 1.6)*gb, between(r, 1, 4)*gb)
	s.stay(between(r, 0.5, 3))
	s.stepTo(weights + between(r, 0, 0.05)*gb)
	s.stay(between(r, 1, 6))
	s.stepTo(between(r, 0.93, 0.96) * sealedCap)
	return s.done(d)
}

// sealedTraining: model and optimiser state loaded, then each step's
// activations rise through the forward pass and are freed after the
// backward pass, to peaks that stay put under about 85 %; now and then an
// evaluation or checkpoint pause.
func sealedTraining(r *rand.Rand, d float64) []float64 {
	s := newSealed(r)
	s.boot()
	base := between(r, 0.25, 0.5) * sealedCap
	s.rampTo(base, between(r, 1, 3)*gb)
	s.stay(between(r, 2, 10))
	peak := between(r, 0.70, 0.83) * sealedCap
	period := between(r, 1.5, 9)
	rise := between(r, 0.5, 0.85)
	every := 40 + r.IntN(160)
	for i := 1; s.now() < d; i++ {
		p := math.Min(peak*(1+0.003*r.NormFloat64()), 0.84*sealedCap)
		s.rampTo(p, (p-base)/(period*rise))
		s.stepTo(base)
		s.stay(period * (1 - rise) * between(r, 0.8, 1.2))
		if i%every == 0 {
			s.stay(between(r, 3, 15))
		}
	}
	return s.done(d)
}

// sealedModelServer: an inference server loading two to four models one
// after another, each followed by a warm-up whose workspace is mostly
// freed, with pauses between the models, ending flat below the capacity.
func sealedModelServer(r *rand.Rand, d float64) []float64 {
	s := newSealed(r)
	s.boot()
	n := 2 + r.IntN(3)
	total := between(r, 0.55, 0.85)*sealedCap - s.v
	weights := make([]float64, n)
	sum := 0.0
	for i := range weights {
		weights[i] = between(r, 0.5, 1.5)
		sum += weights[i]
	}
	for i, w := range weights {
		size := total * w / sum * 0.97
		s.rampTo(s.v+size, between(r, 0.4, 2)*gb)
		kept := s.v + between(r, 0.005, 0.01)*total
		s.stepTo(s.v + between(r, 0.05, 0.3)*gb)
		s.stay(between(r, 0.5, 2))
		s.stepTo(kept)
		if i < n-1 {
			s.stay(between(r, 3, 25))
		}
	}
	return s.done(d)
}

// sealedKVCache: weights, an idle spell, then KV-cache blocks of about
// 0.25 GB reserved one every 1.5 s on average at random gaps (now and then
// a request ends and frees one), until the OOM.
func sealedKVCache(r *rand.Rand, d float64) []float64 {
	s := newSealed(r)
	s.boot()
	s.rampTo(between(r, 0.25, 0.5)*sealedCap, between(r, 0.8, 2)*gb)
	s.stay(between(r, 2, 20))
	step, mean, free := between(r, 0.22, 0.28)*gb, between(r, 1.2, 1.8), between(r, 0, 0.15)
	s.growUntilOOM(d, func() {
		s.stay(math.Min(math.Max(r.ExpFloat64()*mean, 0.1), 8*mean))
		if r.Float64() < free {
			s.stepTo(s.v - step)
		} else {
			s.stepTo(s.v + step)
		}
	})
	return s.done(d)
}

// sealedFastGrowth: about 3 GB loaded, then growth of about 0.5 GB/s in
// allocations a few tenths of a second apart, until the OOM.
func sealedFastGrowth(r *rand.Rand, d float64) []float64 {
	s := newSealed(r)
	s.boot()
	s.rampTo(between(r, 2.7, 3.3)*gb, between(r, 1, 3)*gb)
	s.stay(between(r, 1, 12))
	rate, gap := between(r, 0.4, 0.6)*gb, between(r, 0.1, 0.4)
	s.growUntilOOM(d, func() {
		g := gap * between(r, 0.7, 1.3)
		s.v += rate * g
		s.stay(g)
	})
	return s.done(d)
}

// sealedLeak: a training run with a planned length (the horizon) that
// leaks 1-3 MB/s under its step-to-step sawtooth, and reaches the OOM
// between 40 % and 85 % of its planned length.
func sealedLeak(r *rand.Rand, d float64) []float64 {
	s := newSealed(r)
	s.boot()
	leak := between(r, 1e6, 3e6)
	amp := between(r, 0.03, 0.08) * sealedCap
	oomAt := math.Min(between(r, 0.4, 0.85)*d, 7e9/leak)
	start := s.now() + between(r, 5, 20)
	base := sealedCap - amp - leak*(oomAt-start)
	s.rampTo(base, between(r, 1, 3)*gb)
	s.stay(start - s.now())
	period := between(r, 2, 8)
	s.growUntilOOM(d, func() {
		trough := base + leak*(s.now()-start)
		s.stepTo(trough + amp*(1+0.01*r.NormFloat64()))
		s.stay(period * between(r, 0.3, 0.5))
		s.stepTo(trough)
		s.stay(period * between(r, 0.3, 0.5))
	})
	return s.done(d)
}

// sealedPauseResume: growth in chunks, a pause of up to two minutes part
// of the way (a lull in the load), then growth again at a rate of its own,
// until the OOM.
func sealedPauseResume(r *rand.Rand, d float64) []float64 {
	s := newSealed(r)
	s.boot()
	s.rampTo(between(r, 0.25, 0.45)*sealedCap, between(r, 1, 3)*gb)
	s.stay(between(r, 2, 15))
	pauseAt := s.v + between(r, 0.3, 0.7)*(sealedCap-s.v)
	rate, chunk := between(r, 0.04, 0.25)*gb, between(r, 40e6, 250e6)
	grow := func() {
		s.stay(chunk / rate * between(r, 0.7, 1.3))
		s.stepTo(s.v + chunk)
	}
	for s.v < pauseAt {
		grow()
	}
	s.stay(between(r, 15, 120))
	rate *= between(r, 0.6, 1.5)
	s.growUntilOOM(d, grow)
	return s.done(d)
}
