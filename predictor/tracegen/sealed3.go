package tracegen

import (
	"math"
	"math/rand/v2"

	"github.com/migpro/migpro/predictor/trace"
)

// Sealed3Seed0 is where the third sealed set's seeds start, far from the
// tuned (0), first sealed (900 000), held-out (1 000 000) and second sealed
// (7 300 000) shapes' seeds: shape i of Sealed3Shapes runs seeds
// Sealed3Seed0 + i*100 000 + seed.
const Sealed3Seed0 = 4_400_000

// sealed3Stream is the PCG stream of the third sealed set ("sea3").
const sealed3Stream = 0x73656133

// Sealed3Sizes are the instances the third sealed set runs on, in bytes
// (5, 10, 20 and 40 GB, 10^9 bytes each); each run draws one from its seed.
var Sealed3Sizes = [...]float64{5e9, 10e9, 20e9, 40e9}

// Sealed3Shapes is the third sealed held-out set: eight quiet shapes
// (warm-ups, preallocation, bounded periodic use; four with a declared
// horizon) and six that grow to an OOM (two with a declared horizon).
func Sealed3Shapes() []SealedShape {
	shapes := []SealedShape{
		{Name: "s3-finetune-adapters", WithHorizon: true, render: renderWith(sealed3Generate, s3FinetuneAdapters)},
		{Name: "s3-collective-buffers", WithHorizon: true, render: renderWith(sealed3Generate, s3CollectiveBuffers)},
		{Name: "s3-checkpoint-sawtooth", WithHorizon: true, render: renderWith(sealed3Generate, s3CheckpointSawtooth)},
		{Name: "s3-eval-two-batches", WithHorizon: true, render: renderWith(sealed3Generate, s3EvalTwoBatches)},
		{Name: "s3-speculative-draft", render: renderWith(sealed3Generate, s3SpeculativeDraft)},
		{Name: "s3-notebook-cells", render: renderWith(sealed3Generate, s3NotebookCells)},
		{Name: "s3-half-cast", render: renderWith(sealed3Generate, s3HalfCast)},
		{Name: "s3-graph-capture", render: renderWith(sealed3Generate, s3GraphCapture)},
		{Name: "s3-request-leak", Growing: true, render: renderWith(sealed3Generate, s3RequestLeak)},
		{Name: "s3-shape-cache", Growing: true, render: renderWith(sealed3Generate, s3ShapeCache)},
		{Name: "s3-batch-autotune", Growing: true, render: renderWith(sealed3Generate, s3BatchAutotune)},
		{Name: "s3-chat-sessions", Growing: true, render: renderWith(sealed3Generate, s3ChatSessions)},
		{Name: "s3-logged-tensors-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed3Generate, s3LoggedTensors)},
		{Name: "s3-kept-outputs-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed3Generate, s3KeptOutputs)},
	}
	for i := range shapes {
		shapes[i].Seed0 = Sealed3Seed0 + uint64(i)*100_000
	}
	return shapes
}

// sealed3Generate renders one run of s, its workload written by build, at hz (ShimHz or NVMLHz; both NVML-only). The
// levels are built on a 1/ShimHz grid. A reading is the level rounded up to
// the run's granule, plus Gaussian reading noise; now and then a reading
// lags one tick (the poll raced an allocation or a free). At NVMLHz the
// series reads every tenth tick from a phase the seed picks. A growing
// run ends, at both rates, with the first tick over the instance, read as
// the bytes the driver refused; a quiet run lasts its planned length.
func sealed3Generate(s SealedShape, build func(*s3Levels) float64, seed uint64, hz float64) SealedRun {
	r := rand.New(rand.NewPCG(s.Seed0+seed, sealed3Stream))
	l := &s3Levels{r: r, size: Sealed3Sizes[r.IntN(len(Sealed3Sizes))], growing: s.Growing}
	planned := build(l)
	if !s.Growing {
		l.idle(planned - l.clock())
	}
	granule := []float64{1 << 20, 4 << 20, 4 << 20, 20 << 20}[r.IntN(4)]
	sigma := l.uniform(0, 2e6)
	lagP := l.uniform(0, 0.15)
	phase := r.IntN(int(ShimHz))
	run := SealedRun{Trace: trace.Trace{Name: s.Name}, Capacity: uint64(l.size)}
	if s.WithHorizon {
		run.Horizon = planned
	}
	for i, level := range l.ticks {
		over := level > l.size
		seen := level
		if i > 0 && !over && r.Float64() < lagP {
			seen = l.ticks[i-1]
		}
		if !over && seen > 0 {
			seen = math.Ceil(seen/granule)*granule + sigma*r.NormFloat64()
		}
		if hz > NVMLHz || i%int(ShimHz) == phase || over {
			run.Trace.Rows = append(run.Trace.Rows, trace.Row{T: float64(i) / ShimHz, Used: uint64(math.Max(seen, 0))})
		}
		if over {
			break
		}
	}
	return run
}

// s3Levels builds one run's memory level tick by tick (1/ShimHz s each).
type s3Levels struct {
	r       *rand.Rand
	size    float64 // the instance, bytes
	growing bool
	at      float64 // the level now, bytes
	ticks   []float64
}

// s3Cap bounds a growing run's length: a generator still under its
// instance by then has a bug, which the scoring harness reports.
const s3Cap = 3 * 3600

func (l *s3Levels) clock() float64 { return float64(len(l.ticks)) / ShimHz }

// uniform draws from [lo, hi].
func (l *s3Levels) uniform(lo, hi float64) float64 { return lo + (hi-lo)*l.r.Float64() }

// logNormal draws a positive factor with median 1 and spread sigma.
func (l *s3Levels) logNormal(sigma float64) float64 { return math.Exp(sigma * l.r.NormFloat64()) }

// idle keeps the level for sec seconds.
func (l *s3Levels) idle(sec float64) {
	for n := int(math.Round(sec * ShimHz)); n > 0; n-- {
		l.ticks = append(l.ticks, l.at)
	}
}

// set moves the level to v at the next tick: one allocation or free.
func (l *s3Levels) set(v float64) {
	l.at = v
	l.ticks = append(l.ticks, v)
}

// move moves the level to v linearly over sec seconds (a copy, or a pass
// that allocates as it goes); at least one tick.
func (l *s3Levels) move(v, sec float64) {
	n := max(1, int(math.Round(sec*ShimHz)))
	from := l.at
	for i := 1; i <= n; i++ {
		l.at = from + (v-from)*float64(i)/float64(n)
		l.ticks = append(l.ticks, l.at)
	}
}

// boot is the container's start: nothing on the instance while the image's
// libraries load, the CUDA context created over a few ticks, and a library
// handle (a BLAS workspace) a little later. It returns the room a quiet
// shape may use on top: what is left under 92% of the instance.
func (l *s3Levels) boot() float64 {
	l.idle(l.uniform(1, 8))
	l.move(l.uniform(0.35, 0.7)*1e9, l.uniform(0.3, 1.2))
	l.idle(l.uniform(0.5, 4))
	l.set(l.at + l.uniform(20e6, 120e6))
	l.idle(l.uniform(0.2, 3))
	return 0.92*l.size - l.at
}

// load copies weights of w bytes up in n shards at bps bytes a second,
// with a short pause (file open, deserialisation) before each.
func (l *s3Levels) load(w, bps float64, n int) {
	for range n {
		l.idle(l.uniform(0.1, 1.5))
		l.move(l.at+w/float64(n), w/float64(n)/bps)
	}
}

// s3Event is one growth event of a growing shape, in the shape's own units.
type s3Event struct{ t, units float64 }

// scaleToOOM turns a growth process into bytes: events (in time order,
// from t0) in abstract units are scaled so that the units reached by t0+ttl
// are 3% more than left, the bytes that remain before the instance is full.
// The returned scale is bytes per unit.
func scaleToOOM(events []s3Event, t0, ttl, left float64) float64 {
	sum := 0.0
	for _, e := range events {
		if e.t > t0+ttl {
			break
		}
		sum += e.units
	}
	return 1.03 * left / math.Max(sum, 1e-9)
}

// playUntilOOM plays events (times from now, bytes above base) until the
// level passes the instance; a caching allocator asks the device for whole
// segments of seg bytes, so the level is base plus the segments that cover
// what is held. transient, when set, is an extra spike of its bytes at the
// event's tick (a temporary buffer), freed at the next one.
func (l *s3Levels) playUntilOOM(base, seg float64, events []s3Event, transient func() float64) {
	held := 0.0
	for _, e := range events {
		if l.at > l.size || l.clock() > s3Cap {
			return
		}
		l.idle(e.t - l.clock())
		held += e.units
		v := base + math.Ceil(held/seg)*seg
		if transient != nil {
			l.set(v + transient())
			if l.at > l.size {
				return
			}
		}
		if v != l.at {
			l.set(v)
		}
	}
}
