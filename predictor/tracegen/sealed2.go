package tracegen

import (
	"math"
	"math/rand/v2"

	"github.com/migpro/migpro/predictor/trace"
)

// Sealed2Seed0 is where the second sealed set's seeds start, far from the
// tuned (0), held-out (1 000 000) and first sealed (900 000) shapes' seeds:
// shape i of Sealed2Shapes runs seeds Sealed2Seed0 + i*100 000 + seed.
const Sealed2Seed0 = 7_300_000

// Sealed2Sizes are the instances the second sealed set runs on, in bytes
// (5, 10, 20 and 40 GB, 10^9 bytes each); every run draws one from its seed.
var Sealed2Sizes = [...]float64{5e9, 10e9, 20e9, 40e9}

// Sealed2Shapes is the second sealed held-out set: seven quiet shapes
// (warm-ups, preallocation, caches that level off) and six that grow to an
// OOM, two of them with a declared horizon.
func Sealed2Shapes() []SealedShape {
	shapes := []SealedShape{
		{Name: "s2-prealloc-flat", render: renderWith(sealed2Generate, s2PreallocFlat)},
		{Name: "s2-pool-doubling", render: renderWith(sealed2Generate, s2PoolDoubling)},
		{Name: "s2-model-repository", render: renderWith(sealed2Generate, s2ModelRepository)},
		{Name: "s2-engine-build", render: renderWith(sealed2Generate, s2EngineBuild)},
		{Name: "s2-cache-flush", render: renderWith(sealed2Generate, s2CacheFlush)},
		{Name: "s2-loader-buffers", render: renderWith(sealed2Generate, s2LoaderBuffers)},
		{Name: "s2-train-warmup-horizon", WithHorizon: true, render: renderWith(sealed2Generate, s2TrainWarmup)},
		{Name: "s2-slow-leak", Growing: true, render: renderWith(sealed2Generate, s2SlowLeak)},
		{Name: "s2-growth-resumes", Growing: true, render: renderWith(sealed2Generate, s2GrowthResumes)},
		{Name: "s2-long-context-kv", Growing: true, render: renderWith(sealed2Generate, s2LongContextKV)},
		{Name: "s2-fast-ramp", Growing: true, render: renderWith(sealed2Generate, s2FastRamp)},
		{Name: "s2-leak-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed2Generate, s2LeakHorizon)},
		{Name: "s2-kv-batch-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed2Generate, s2KVBatchHorizon)},
	}
	for i := range shapes {
		shapes[i].Seed0 = Sealed2Seed0 + uint64(i)*100_000
	}
	return shapes
}

// s2Stream is the PCG stream of the second sealed set ("sea2").
const s2Stream = 0x73656132

// sealed2Generate renders one run of s, its workload written by gen, at hz (ShimHz or NVMLHz; both NVML-only). The
// run is built at ShimHz ticks; every used value is rounded up to the
// run's page granule and carries a small reading jitter. At NVMLHz the
// series reads every tenth tick from a seeded phase. A growing run's last
// sample, at both rates, is its first tick over the instance (the OOM); a
// quiet run lasts its planned length.
func sealed2Generate(s SealedShape, gen func(*s2Build) float64, seed uint64, hz float64) SealedRun {
	r := rand.New(rand.NewPCG(s.Seed0+seed, s2Stream))
	b := &s2Build{r: r, cap: Sealed2Sizes[r.IntN(len(Sealed2Sizes))], growing: s.Growing}
	planned := gen(b)
	if !s.Growing {
		b.hold(planned - b.now())
	}
	granule := []float64{2 << 20, 2 << 20, 32 << 20}[r.IntN(3)]
	jitter := s2Between(r, 0, 3e6)
	phase := r.IntN(int(ShimHz))
	run := SealedRun{Trace: trace.Trace{Name: s.Name}, Capacity: uint64(b.cap)}
	if s.WithHorizon {
		run.Horizon = planned
	}
	for i, raw := range b.out {
		u := raw
		if u > 0 {
			u = math.Ceil(u/granule)*granule + s2Between(r, -jitter, jitter)
		}
		if s.Growing && i == len(b.out)-1 {
			u = math.Max(u, raw) // the refused allocation stays refused
		}
		over := u > b.cap
		if hz > NVMLHz || (i >= phase && (i-phase)%int(ShimHz) == 0) || over {
			run.Trace.Rows = append(run.Trace.Rows, trace.Row{T: float64(i) / ShimHz, Used: uint64(math.Max(u, 0))})
		}
		if over {
			break
		}
	}
	return run
}

// s2Between draws uniformly from [lo, hi].
func s2Between(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// s2Build builds one run tick by tick (1/ShimHz s each).
type s2Build struct {
	r       *rand.Rand
	cap     float64 // the instance, bytes
	growing bool
	v       float64 // the level now, bytes
	out     []float64
}

func (b *s2Build) now() float64 { return float64(len(b.out)) / ShimHz }

// draw is s2Between on the run's source.
func (b *s2Build) draw(lo, hi float64) float64 { return s2Between(b.r, lo, hi) }

// hold keeps the level for sec seconds (nothing when sec <= 0).
func (b *s2Build) hold(sec float64) {
	for n := int(math.Round(sec * ShimHz)); n > 0; n-- {
		b.out = append(b.out, b.v)
	}
}

// rampTo moves the level to to at rate bytes a second.
func (b *s2Build) rampTo(to, rate float64) {
	n := max(1, int(math.Ceil(math.Abs(to-b.v)/rate*ShimHz)))
	from := b.v
	for i := 1; i <= n; i++ {
		b.v = from + (to-from)*float64(i)/float64(n)
		b.out = append(b.out, b.v)
	}
}

// jump reaches to in one or two ticks: one allocation or free as a reading
// sees it.
func (b *s2Build) jump(to float64) {
	if b.r.IntN(2) == 0 {
		b.out = append(b.out, (b.v+to)/2)
	}
	b.v = to
	b.out = append(b.out, b.v)
}

// start is the container's start: the instance's own small use while the
// process imports its libraries, then the CUDA context, then a settle. It
// returns the room left for the framework, in bytes.
func (b *s2Build) start() float64 {
	b.v = b.draw(0, 30e6)
	b.hold(b.draw(0.5, 5))
	b.jump(b.v + b.draw(0.25, 0.55)*1e9)
	b.hold(b.draw(0.2, 2))
	return b.cap - b.v
}

// s2Limit bounds a growing run: a generator that has not reached the OOM
// by then has a bug, which the scoring harness reports.
const s2Limit = 4 * 3600

// growUntilOOM repeats step, which raises the level, until the level is
// over the instance.
func (b *s2Build) growUntilOOM(step func()) {
	for b.v <= b.cap && b.now() < s2Limit {
		step()
	}
}

// gaps returns n positive weights that sum to 1, each at least 1/(4n).
func (b *s2Build) gaps(n int) []float64 {
	w := make([]float64, n)
	sum := 0.0
	for i := range w {
		w[i] = 0.25 + b.r.ExpFloat64()
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}
