package tracegen

import (
	"math"
	"math/rand/v2"

	"github.com/migpro/migpro/predictor/trace"
)

// ShapeCapacity is the instance issue 29's shapes are described on: 10 GB
// (10^10 bytes).
const ShapeCapacity uint64 = 1e10

const gb = 1e9

// span is a range [Lo, Hi] a shape draws one value from per run.
type span struct{ Lo, Hi float64 }

func (s span) draw(r *rand.Rand) float64 { return s.Lo + (s.Hi-s.Lo)*r.Float64() }

// Shape is an NVML-only memory series (t, used_bytes: a container without
// the shim, so no allocation calls) described by a few numbers, rebuilt
// from issue 29's descriptions of serving, vLLM, KV-cache and training
// runs. Unlike RealFamily it does not model an allocator: it is the plain
// shape the description gives, so the predictor cannot lean on one model of
// the allocator. Levels are shares of ShapeCapacity.
type Shape struct {
	Name    string
	Growing bool
	// Duration is the run's planned length in seconds. WithHorizon says the
	// run declares it (the horizon annotation): the predictor is then given
	// Horizon = Duration.
	Duration    float64
	WithHorizon bool
	// Seed0 is the first seed the tests run; tuned and held-out sets use
	// disjoint seeds.
	Seed0 uint64
	gen   func(r *rand.Rand, d float64) []float64 // used bytes at every 0.1 s tick
}

// Generate renders one run at hz (ShimHz or NVMLHz, both NVML-only: no
// Allocs). The 1 Hz series reads every tenth tick from a seeded phase. A
// growing run's last sample is its first tick over ShapeCapacity, at both
// rates; a quiet run is clamped 64 MB under it.
func (s Shape) Generate(seed uint64, hz float64) trace.Trace {
	r := rand.New(rand.NewPCG(s.Seed0+seed, 0x73686170)) // "shap"
	used := s.gen(r, s.Duration)
	phase := r.IntN(int(ShimHz))
	c := float64(ShapeCapacity)
	tr := trace.Trace{Name: s.Name}
	for i, u := range used {
		if !s.Growing {
			u = math.Min(u, c-64e6)
		}
		over := u > c
		if hz > NVMLHz || (i >= phase && (i-phase)%int(ShimHz) == 0) || over {
			tr.Rows = append(tr.Rows, trace.Row{T: float64(i) / ShimHz, Used: uint64(math.Max(u, 0))})
		}
		if over {
			break
		}
	}
	return tr
}

// ticks builds a series tick by tick.
type ticks struct {
	r   *rand.Rand
	out []float64
	v   float64
}

func (k *ticks) now() float64 { return float64(len(k.out)) / ShimHz }

// hold keeps the level for sec seconds.
func (k *ticks) hold(sec float64) {
	for end := k.now() + sec; k.now() < end; {
		k.out = append(k.out, k.v)
	}
}

// ramp moves the level linearly to v over sec seconds.
func (k *ticks) ramp(v, sec float64) {
	n := max(1, int(math.Round(sec*ShimHz)))
	from := k.v
	for i := 1; i <= n; i++ {
		k.out = append(k.out, from+(v-from)*float64(i)/float64(n))
	}
	k.v = v
}

func (k *ticks) until(d float64) { k.hold(d - k.now()) }

// context is the CUDA context, 0.3 to 0.6 GB, the level a run starts at.
func newTicks(r *rand.Rand) *ticks {
	k := &ticks{r: r}
	k.v = (0.3 + 0.3*r.Float64()) * gb
	k.hold(1)
	return k
}

// servingStaircase: a load of load GB in loadSec s, then steps of step GB
// each held hold s while batch sizes vary, up to top of capacity, then flat.
type servingStaircase struct{ load, loadSec, step, hold, top span }

func (p servingStaircase) gen(r *rand.Rand, d float64) []float64 {
	k := newTicks(r)
	k.ramp(k.v+p.load.draw(r)*gb, p.loadSec.draw(r))
	top, step := p.top.draw(r)*float64(ShapeCapacity), p.step.draw(r)*gb
	for k.v+step <= top && k.now() < d {
		k.hold(p.hold.draw(r))
		k.ramp(k.v+step, 0.1)
	}
	k.until(d)
	return k.out
}

// vllmStart: weights loaded at rate GB/s to loadTo of capacity, a profiling
// spike of spike GB for a few seconds, then one step to final of capacity
// (the KV cache reserved at once), flat from then on.
type vllmStart struct{ rate, loadTo, spike, final span }

func (p vllmStart) gen(r *rand.Rand, d float64) []float64 {
	k := newTicks(r)
	c := float64(ShapeCapacity)
	to := p.loadTo.draw(r) * c
	k.ramp(to, (to-k.v)/(p.rate.draw(r)*gb))
	k.hold(1 + 2*r.Float64())
	base := k.v
	k.ramp(base+p.spike.draw(r)*gb, 0.3)
	k.hold(1 + 3*r.Float64())
	k.ramp(base, 0.1)
	k.hold(1 + 2*r.Float64())
	k.ramp(p.final.draw(r)*c, 0.1)
	k.until(d)
	return k.out
}

// kvSteps: a load of load GB, flat for idle s, then a KV cache that grows in
// steps of step GB, one every gap s on average (exponential gaps), until the
// OOM.
type kvSteps struct{ load, idle, step, gap span }

func (p kvSteps) gen(r *rand.Rand, d float64) []float64 {
	k := newTicks(r)
	k.ramp(k.v+p.load.draw(r)*gb, 4+6*r.Float64())
	k.hold(p.idle.draw(r))
	step, gap := p.step.draw(r)*gb, p.gap.draw(r)
	for k.now() < d {
		k.hold(math.Min(r.ExpFloat64()*gap, 6*gap))
		k.ramp(k.v+step, 0.1)
	}
	return k.out[:int(d*ShimHz)]
}

// linearGrowth: a load to from GB, flat for idle s, then growth at rate GB/s
// with 20 MB of noise, until the OOM.
type linearGrowth struct{ from, idle, rate span }

func (p linearGrowth) gen(r *rand.Rand, d float64) []float64 {
	k := newTicks(r)
	k.ramp(p.from.draw(r)*gb, 4+4*r.Float64())
	k.hold(p.idle.draw(r))
	rate := p.rate.draw(r) * gb
	base := k.v
	for t0 := k.now(); k.now() < d; {
		k.out = append(k.out, base+rate*(k.now()-t0)+20e6*r.NormFloat64())
	}
	return k.out
}

// burstyKV: a load of load GB, then bursts of requests every gap s: each
// adds burst GB of KV cache within a second, of which kept stays (the rest
// is freed 1 to 4 s later, when the requests end).
type burstyKV struct{ load, gap, burst, kept span }

func (p burstyKV) gen(r *rand.Rand, d float64) []float64 {
	k := newTicks(r)
	k.ramp(k.v+p.load.draw(r)*gb, 4+6*r.Float64())
	kept := p.kept.draw(r)
	for k.now() < d {
		k.hold(p.gap.draw(r))
		b := p.burst.draw(r) * gb
		base := k.v
		k.ramp(base+b, 0.5+0.5*r.Float64())
		k.hold(1 + 3*r.Float64())
		k.ramp(base+kept*b, 0.1)
	}
	return k.out[:int(d*ShimHz)]
}

// teeth: training whose every step of period s fills activations from
// the base up to a peak, then frees them. The first peak is at peak of
// capacity, the base amp of capacity under it; each step's peak is creep of
// capacity higher than the last (0: quiet), with 0.5% of noise.
type teeth struct{ peak, amp, period, creep span }

func (p teeth) gen(r *rand.Rand, d float64) []float64 {
	k := newTicks(r)
	c := float64(ShapeCapacity)
	peak, amp, period, creep := p.peak.draw(r)*c, p.amp.draw(r)*c, p.period.draw(r), p.creep.draw(r)*c
	k.ramp(peak-amp, 8+8*r.Float64())
	for k.now() < d {
		top := peak + 0.005*c*r.NormFloat64()
		k.ramp(top, period*0.8)
		k.ramp(peak-amp, period*0.2)
		peak += creep
	}
	return k.out[:int(d*ShimHz)]
}
