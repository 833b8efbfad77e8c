package tracegen

import (
	"math"
	"math/rand/v2"

	"github.com/migpro/migpro/predictor/trace"
)

// Sealed6Seed0 is where the sixth sealed set's seeds start, far from every
// earlier set's: the tuned shapes (0), the first sealed set (900 000), the
// held-out shapes (1 000 000), the third (4 400 000), second (7 300 000),
// fourth (12 600 000) and fifth (23 900 000) sealed sets. Shape i of
// Sealed6Shapes runs seeds Sealed6Seed0 + i*100 000 + seed.
const Sealed6Seed0 = 41_700_000

// sealed6Stream is the PCG stream of the sixth sealed set ("Seal6").
const sealed6Stream = 0x5365616c36

// Sealed6Sizes are the instances the sixth sealed set runs on, in bytes
// (10^9 bytes a GB); each run draws one from its seed, so 10 GB, the
// instance of issue 29's shapes, comes up in half the runs.
var Sealed6Sizes = [...]float64{5e9, 10e9, 10e9, 10e9, 20e9, 40e9}

// Sealed6Shapes is the sixth sealed held-out set: six quiet shapes
// (sliding-window caches, data-parallel bucket rebuilds, gradual
// unfreezing, lazily loaded pipeline models, a prefix cache under a
// budget, an arena that shrinks after every run; two with a declared
// horizon) and six that grow to an OOM (a streaming group-by in a growing
// pool, instances added with load, an index rebuilt beside itself, an
// autotuned prefetch depth; and, with a declared horizon, a snapshot
// upload backlog and a dataset cached on the device).
func Sealed6Shapes() []SealedShape {
	shapes := []SealedShape{
		{Name: "s6-sliding-window-kv", render: renderWith(sealed6Generate, s6SlidingWindowKV)},
		{Name: "s6-bucket-rebuild", WithHorizon: true, render: renderWith(sealed6Generate, s6BucketRebuild)},
		{Name: "s6-gradual-unfreeze", WithHorizon: true, render: renderWith(sealed6Generate, s6GradualUnfreeze)},
		{Name: "s6-lazy-pipeline", render: renderWith(sealed6Generate, s6LazyPipeline)},
		{Name: "s6-prefix-cache-budget", render: renderWith(sealed6Generate, s6PrefixCacheBudget)},
		{Name: "s6-arena-shrink", render: renderWith(sealed6Generate, s6ArenaShrink)},
		{Name: "s6-streaming-groupby", Growing: true, render: renderWith(sealed6Generate, s6StreamingGroupBy)},
		{Name: "s6-instance-autoscale", Growing: true, render: renderWith(sealed6Generate, s6InstanceAutoscale)},
		{Name: "s6-index-rebuild", Growing: true, render: renderWith(sealed6Generate, s6IndexRebuild)},
		{Name: "s6-prefetch-autotune", Growing: true, render: renderWith(sealed6Generate, s6PrefetchAutotune)},
		{Name: "s6-snapshot-backlog-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed6Generate, s6SnapshotBacklog)},
		{Name: "s6-dataset-cache-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed6Generate, s6DatasetCache)},
	}
	for i := range shapes {
		shapes[i].Seed0 = Sealed6Seed0 + uint64(i)*100_000
	}
	return shapes
}

// s6Limit bounds a growing run's length in seconds: a generator still
// under its instance by then has a bug, which the scoring harness reports.
const s6Limit = 4 * 3600

// sealed6Generate renders one run of s, its workload written by write, at hz (ShimHz or NVMLHz; both NVML-only). The
// process level is written on a 1/ShimHz grid, then read through the sixth
// set's own noise model:
//   - the instance shows 5-60 MB the driver keeps for itself, from the
//     first reading;
//   - once the process holds memory, its kernels are loaded lazily on
//     first use: 20-200 MB in all, in pieces of 1-8 MB at random times,
//     most of it within the first minutes (again after every restart);
//   - the process's memory is mapped in 2 MiB pages (two runs in three)
//     or 32 MiB blocks;
//   - the driver refreshes the counter every 1-5 ticks, so a poll reads
//     the value of the last refresh; it reports whole 4 KiB pages or whole
//     MiB (drawn);
//   - every poll's time stamp wanders by a normal jitter of 2-25 ms
//     (bounded to 40 ms); now and then (0.2-2% of polls) a poll blocks for
//     0.1-0.8 s, comes back with the value it finds then, and the polls it
//     blocked are lost;
//   - the collector loses 2-15 s of rows at random (every 10-60 minutes on
//     average).
//
// At NVMLHz the series polls every tenth tick from a phase the seed picks.
// A growing run ends, at both rates, with its first tick over the
// instance, read at once as the bytes the driver refused; a quiet run
// lasts its planned length. The reading loop makes the same draws at both
// rates, so the two series of a seed read the same levels.
func sealed6Generate(s SealedShape, write func(*s6Tape) float64, seed uint64, hz float64) SealedRun {
	r := rand.New(rand.NewPCG(s.Seed0+seed, sealed6Stream))
	p := &s6Tape{r: r, size: Sealed6Sizes[r.IntN(len(Sealed6Sizes))]}
	p.floor = p.draw(5e6, 60e6)
	// The lazy kernel loads: cumulative bytes after up ticks of uptime.
	var lazyAt []int
	var lazyCum []float64
	for sum, t := 0.0, 0.0; ; {
		t += p.draw(0.5, 5) * r.ExpFloat64() * (1 + sum/30e6)
		piece := p.draw(1e6, 8e6)
		if sum+piece > 200e6 || (sum > 20e6 && r.Float64() < 0.05) {
			break
		}
		sum += piece
		lazyAt, lazyCum = append(lazyAt, int(t*ShimHz)), append(lazyCum, sum)
	}
	p.lazy = lazyCum[len(lazyCum)-1]
	planned := write(p)
	if !s.Growing {
		p.hold(planned - p.now())
	}
	granule := []float64{2 << 20, 2 << 20, 32 << 20}[r.IntN(3)]
	quantum := []float64{4096, mib}[r.IntN(2)]
	refresh := 1 + r.IntN(5)
	rphase := r.IntN(refresh)
	sigma := p.draw(0.002, 0.025)
	blockOdds := p.draw(0.002, 0.02)
	gapMean := p.draw(600, 3600)
	phase := r.IntN(int(ShimHz))
	run := SealedRun{Trace: trace.Trace{Name: s.Name}, Capacity: uint64(p.size)}
	if s.WithHorizon {
		run.Horizon = planned
	}
	// shown is the counter's value at each tick, before refresh and
	// rounding to the reporting unit.
	shown := make([]float64, len(p.ticks))
	up, k := 0, 0
	for i, level := range p.ticks {
		shown[i] = p.floor
		if level <= 0 {
			up, k = 0, 0
			continue
		}
		for k < len(lazyAt) && lazyAt[k] <= up {
			k++
		}
		extra := 0.0
		if k > 0 {
			extra = lazyCum[k-1]
		}
		up++
		shown[i] = math.Min(p.floor+extra+math.Ceil(level/granule)*granule, p.size)
	}
	read := func(i int, t float64) trace.Row {
		j := max(0, i-((i-rphase)%refresh+refresh)%refresh)
		return trace.Row{T: t, Used: uint64(math.Floor(shown[j]/quantum) * quantum)}
	}
	gapAt, gapEnd := gapMean*r.ExpFloat64(), 0.0
	pending, skipTo := -1, -1
	for i, level := range p.ticks {
		t := float64(i) / ShimHz
		jit := math.Max(-0.04, math.Min(0.04, sigma*r.NormFloat64()))
		blocks := r.Float64() < blockOdds
		wait := 1 + r.IntN(8)
		if t >= gapAt {
			gapEnd = t + p.draw(2, 15)
			gapAt = gapEnd + gapMean*r.ExpFloat64()
		}
		if p.floor+p.lazy+level > p.size {
			run.Trace.Rows = append(run.Trace.Rows, trace.Row{T: t + math.Abs(jit), Used: uint64(math.Ceil(p.floor + p.lazy + level))})
			break
		}
		if i == pending {
			run.Trace.Rows = append(run.Trace.Rows, read(i, t+jit))
			continue
		}
		polled := hz > NVMLHz || i%int(ShimHz) == phase
		if !polled || i <= skipTo || t < gapEnd {
			continue
		}
		if blocks {
			pending, skipTo = i+wait, i+wait
			continue
		}
		run.Trace.Rows = append(run.Trace.Rows, read(i, t+jit))
	}
	return run
}

// s6Tape records one run's process level tick by tick (1/ShimHz s each),
// in bytes, without the driver's share and the lazily loaded kernels.
type s6Tape struct {
	r     *rand.Rand
	size  float64 // the instance, bytes
	floor float64 // the driver's share of the instance, bytes
	lazy  float64 // the lazily loaded kernels once all are in, bytes
	level float64
	ticks []float64
}

func (p *s6Tape) now() float64 { return float64(len(p.ticks)) / ShimHz }

// draw is uniform on [lo, hi].
func (p *s6Tape) draw(lo, hi float64) float64 { return lo + (hi-lo)*p.r.Float64() }

// vary multiplies x by a factor uniform on [1-f, 1+f].
func (p *s6Tape) vary(x, f float64) float64 { return x * p.draw(1-f, 1+f) }

// lognorm is a log-normal factor of median 1 and spread s.
func (p *s6Tape) lognorm(s float64) float64 { return math.Exp(s * p.r.NormFloat64()) }

// hold keeps the level for sec seconds.
func (p *s6Tape) hold(sec float64) {
	for n := int(math.Round(sec * ShimHz)); n > 0; n-- {
		p.ticks = append(p.ticks, p.level)
	}
}

// set makes the level v at the next tick: one allocation or free.
func (p *s6Tape) set(v float64) {
	p.level = math.Max(v, 0)
	p.ticks = append(p.ticks, p.level)
}

// ramp moves the level to v evenly over sec seconds, at least one tick.
func (p *s6Tape) ramp(v, sec float64) {
	n := max(1, int(math.Round(sec*ShimHz)))
	from := p.level
	for i := 1; i <= n; i++ {
		p.set(from + (v-from)*float64(i)/float64(n))
	}
}

// load adds b bytes at bps bytes a second (weights read and copied up).
func (p *s6Tape) load(b, bps float64) { p.ramp(p.level+b, b/bps) }

// over says whether the level, with the driver's share and the kernels,
// has passed the instance.
func (p *s6Tape) over() bool { return p.floor+p.lazy+p.level > p.size }

// left is what remains before the instance is full.
func (p *s6Tape) left() float64 { return p.size - p.floor - p.lazy - p.level }

// room is what is left under 90% of the instance: all a quiet shape may
// fill.
func (p *s6Tape) room() float64 { return 0.9*p.size - p.floor - p.lazy - p.level }

// boot is the process coming up: nothing for 2-20 s (imports, reading its
// configuration, waiting for its peers), a CUDA context of 0.3-0.6 GB (at
// most 6% of the instance) in one tick, then 0.3-3 s of setup. It returns
// the room a quiet shape may fill.
func (p *s6Tape) boot() float64 {
	p.hold(p.draw(2, 20))
	p.set(p.level + math.Min(p.draw(0.3e9, 0.6e9), 0.06*p.size))
	p.hold(p.draw(0.3, 3))
	return p.room()
}

// blocks rounds v up to whole blocks of b bytes.
func blocks(v, b float64) float64 { return math.Ceil(v/b) * b }
