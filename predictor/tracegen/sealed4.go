package tracegen

import (
	"math"
	"math/rand/v2"

	"github.com/migpro/migpro/predictor/trace"
)

// Sealed4Seed0 is where the fourth sealed set's seeds start, far from the
// tuned (0), first sealed (900 000), held-out (1 000 000), third sealed
// (4 400 000) and second sealed (7 300 000) shapes' seeds: shape i of
// Sealed4Shapes runs seeds Sealed4Seed0 + i*100 000 + seed.
const Sealed4Seed0 = 12_600_000

// sealed4Stream is the PCG stream of the fourth sealed set ("Seal4").
const sealed4Stream = 0x5365616c34

// Sealed4Sizes are the instances the fourth sealed set runs on, in bytes
// (5, 10, 20 and 40 GB, 10^9 bytes each); each run draws one from its seed.
var Sealed4Sizes = [...]float64{5e9, 10e9, 20e9, 40e9}

// Sealed4Shapes is the fourth sealed held-out set: seven quiet shapes
// (multi-stage jobs, bounded caches, per-request spikes; four with a
// declared horizon) and six that grow to an OOM (two with a declared
// horizon).
func Sealed4Shapes() []SealedShape {
	shapes := []SealedShape{
		{Name: "s4-pipeline-stages", WithHorizon: true, render: renderWith(sealed4Generate, s4PipelineStages)},
		{Name: "s4-embedding-shards", WithHorizon: true, render: renderWith(sealed4Generate, s4EmbeddingShards)},
		{Name: "s4-sweep-trials", WithHorizon: true, render: renderWith(sealed4Generate, s4SweepTrials)},
		{Name: "s4-rl-alternating", WithHorizon: true, render: renderWith(sealed4Generate, s4RLAlternating)},
		{Name: "s4-diffusion-decode", render: renderWith(sealed4Generate, s4DiffusionDecode)},
		{Name: "s4-video-streams", render: renderWith(sealed4Generate, s4VideoStreams)},
		{Name: "s4-expert-cache", render: renderWith(sealed4Generate, s4ExpertCache)},
		{Name: "s4-request-type-leak", Growing: true, render: renderWith(sealed4Generate, s4RequestTypeLeak)},
		{Name: "s4-id-cache", Growing: true, render: renderWith(sealed4Generate, s4IDCache)},
		{Name: "s4-index-ingest", Growing: true, render: renderWith(sealed4Generate, s4IndexIngest)},
		{Name: "s4-fragmentation-creep", Growing: true, render: renderWith(sealed4Generate, s4FragmentationCreep)},
		{Name: "s4-replay-buffer-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed4Generate, s4ReplayBuffer)},
		{Name: "s4-profiler-buffer-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed4Generate, s4ProfilerBuffer)},
	}
	for i := range shapes {
		shapes[i].Seed0 = Sealed4Seed0 + uint64(i)*100_000
	}
	return shapes
}

// s4Limit bounds a growing run's length in seconds: a generator still
// under its instance by then has a bug, which the scoring harness reports.
const s4Limit = 4 * 3600

// sealed4Generate renders one run of s, its workload written by write, at hz (ShimHz or NVMLHz; both NVML-only). The
// process level is written on a 1/ShimHz grid, then read through the
// fourth set's own noise model:
//   - the instance shows a small driver floor (5-60 MB) from the start;
//   - the process's allocations are rounded up to a page size the seed
//     picks (64 KiB, 2 MiB twice as often, or 32 MiB);
//   - while the process holds memory, a helper library's small buffers
//     wander around it (a mean-reverting walk, spread up to 6 MB, settling
//     over 5-30 s);
//   - the driver refreshes its counter every 1, 2 or 3 ticks, so readings
//     in between repeat the last refresh;
//   - up to 2% of polls time out and leave no row.
//
// At NVMLHz the series reads every tenth tick from a phase the seed picks.
// A growing run ends, at both rates, with its first tick over the
// instance, read as the bytes the driver refused; a quiet run lasts its
// planned length.
func sealed4Generate(s SealedShape, write func(*s4Tape) float64, seed uint64, hz float64) SealedRun {
	r := rand.New(rand.NewPCG(s.Seed0+seed, sealed4Stream))
	p := &s4Tape{r: r, size: Sealed4Sizes[r.IntN(len(Sealed4Sizes))]}
	p.floor = p.draw(5e6, 60e6)
	planned := write(p)
	if !s.Growing {
		p.stay(planned - p.now())
	}
	page := []float64{64 << 10, 2 << 20, 2 << 20, 32 << 20}[r.IntN(4)]
	spread, settle := p.draw(0, 6e6), p.draw(5, 30)
	refresh := 1 + r.IntN(3)
	drop := p.draw(0, 0.02)
	phase := r.IntN(int(ShimHz))
	run := SealedRun{Trace: trace.Trace{Name: s.Name}, Capacity: uint64(p.size)}
	if s.WithHorizon {
		run.Horizon = planned
	}
	walk, shown := 0.0, p.floor
	keep := math.Exp(-1 / (settle * ShimHz))
	for i, level := range p.ticks {
		walk = keep*walk + spread*math.Sqrt(1-keep*keep)*r.NormFloat64()
		over := p.floor+level > p.size
		if i%refresh == 0 || over {
			shown = p.floor
			if level > 0 {
				shown += math.Ceil(level/page)*page + walk
			}
		}
		if over {
			shown = p.floor + level
		}
		read := hz > NVMLHz || i%int(ShimHz) == phase
		if over || (read && r.Float64() >= drop) {
			run.Trace.Rows = append(run.Trace.Rows, trace.Row{T: float64(i) / ShimHz, Used: uint64(math.Max(shown, 0))})
		}
		if over {
			break
		}
	}
	return run
}

// s4Tape records one run's process level tick by tick (1/ShimHz s each),
// in bytes, without the driver floor.
type s4Tape struct {
	r     *rand.Rand
	size  float64 // the instance, bytes
	floor float64 // the driver's own share of the instance, bytes
	level float64
	ticks []float64
}

func (p *s4Tape) now() float64 { return float64(len(p.ticks)) / ShimHz }

// draw is uniform on [lo, hi].
func (p *s4Tape) draw(lo, hi float64) float64 { return lo + (hi-lo)*p.r.Float64() }

// jitter multiplies x by a factor uniform on [1-f, 1+f].
func (p *s4Tape) jitter(x, f float64) float64 { return x * p.draw(1-f, 1+f) }

// stay holds the level for sec seconds.
func (p *s4Tape) stay(sec float64) {
	for n := int(math.Round(sec * ShimHz)); n > 0; n-- {
		p.ticks = append(p.ticks, p.level)
	}
}

// to sets the level at the next tick: one allocation or free.
func (p *s4Tape) to(v float64) {
	p.level = math.Max(v, 0)
	p.ticks = append(p.ticks, p.level)
}

// glide moves the level to v evenly over sec seconds, at least one tick.
func (p *s4Tape) glide(v, sec float64) {
	n := max(1, int(math.Round(sec*ShimHz)))
	from := p.level
	for i := 1; i <= n; i++ {
		p.to(from + (v-from)*float64(i)/float64(n))
	}
}

// over says whether the level (with the floor) has passed the instance.
func (p *s4Tape) over() bool { return p.floor+p.level > p.size }

// start is the process coming up: nothing for 0.5-10 s, then its CUDA
// context (0.3-0.6 GB) in one to three ticks, then 1-5 s of setup. It
// returns the headroom a quiet shape may fill: what is left under 90% of
// the instance.
func (p *s4Tape) start() float64 {
	p.stay(p.draw(0.5, 10))
	p.glide(p.draw(0.3e9, 0.6e9), float64(1+p.r.IntN(3))/ShimHz)
	p.stay(p.draw(1, 5))
	return 0.9*p.size - p.floor - p.level
}

// copyIn adds b bytes at bps bytes a second (weights copied up).
func (p *s4Tape) copyIn(b, bps float64) { p.glide(p.level+b, b/bps) }

// s4Growth is a growth process in abstract units: at times at (seconds,
// ascending), units[i] are added.
type s4Growth struct {
	at, units []float64
}

func (g *s4Growth) add(t, u float64) {
	g.at = append(g.at, t)
	g.units = append(g.units, u)
}

// bytesPerUnit is the scale at which the units added up to time full fill
// left bytes, with 2% to spare, so the OOM falls at about that time.
func (g *s4Growth) bytesPerUnit(full, left float64) float64 {
	sum := 0.0
	for i, t := range g.at {
		if t > full {
			break
		}
		sum += g.units[i]
	}
	return 1.02 * left / math.Max(sum, 1e-9)
}

// play adds the process's units at their times, scaled, each allocation
// rounded up to chunk bytes, until the level passes the instance.
func (p *s4Tape) play(g s4Growth, scale, chunk float64) {
	held, base := 0.0, p.level
	for i, t := range g.at {
		if p.over() || p.now() > s4Limit {
			return
		}
		p.stay(t - p.now())
		held += g.units[i] * scale
		if v := base + math.Ceil(held/chunk)*chunk; v != p.level {
			p.to(v)
		}
	}
}
