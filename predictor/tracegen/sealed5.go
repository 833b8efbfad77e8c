package tracegen

import (
	"math"
	"math/rand/v2"

	"github.com/migpro/migpro/predictor/trace"
)

// Sealed5Seed0 is where the fifth sealed set's seeds start, far from the
// tuned (0), first sealed (900 000), held-out (1 000 000), third sealed
// (4 400 000), second sealed (7 300 000) and fourth sealed (12 600 000)
// shapes' seeds: shape i of Sealed5Shapes runs seeds
// Sealed5Seed0 + i*100 000 + seed.
const Sealed5Seed0 = 23_900_000

// sealed5Stream is the PCG stream of the fifth sealed set ("Seal5").
const sealed5Stream = 0x5365616c35

// Sealed5Sizes are the instances the fifth sealed set runs on, in bytes
// (10^9 bytes a GB); each run draws one from its seed, so 10 GB, the
// instance of issue 29's shapes, comes up twice as often as the others.
var Sealed5Sizes = [...]float64{5e9, 10e9, 10e9, 20e9, 40e9}

// Sealed5Shapes is the fifth sealed held-out set: seven quiet shapes
// (model version swaps, spilling at a limit, checkpoint gathers, a
// sequence-length schedule, worker processes, garbage collected in bulk,
// elastic restarts; three with a declared horizon) and six that grow to an
// OOM (two with a declared horizon).
func Sealed5Shapes() []SealedShape {
	shapes := []SealedShape{
		{Name: "s5-version-swap", render: renderWith(sealed5Generate, s5VersionSwap)},
		{Name: "s5-spill-limit", WithHorizon: true, render: renderWith(sealed5Generate, s5SpillLimit)},
		{Name: "s5-checkpoint-gather", WithHorizon: true, render: renderWith(sealed5Generate, s5CheckpointGather)},
		{Name: "s5-seqlen-schedule", render: renderWith(sealed5Generate, s5SeqlenSchedule)},
		{Name: "s5-worker-processes", render: renderWith(sealed5Generate, s5WorkerProcesses)},
		{Name: "s5-gc-cycles", render: renderWith(sealed5Generate, s5GCCycles)},
		{Name: "s5-elastic-restart", WithHorizon: true, render: renderWith(sealed5Generate, s5ElasticRestart)},
		{Name: "s5-concat-state", Growing: true, render: renderWith(sealed5Generate, s5ConcatState)},
		{Name: "s5-traffic-ramp", Growing: true, render: renderWith(sealed5Generate, s5TrafficRamp)},
		{Name: "s5-backlog-queue", Growing: true, render: renderWith(sealed5Generate, s5BacklogQueue)},
		{Name: "s5-adapter-hoard", Growing: true, render: renderWith(sealed5Generate, s5AdapterHoard)},
		{Name: "s5-moe-imbalance-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed5Generate, s5MoEImbalance)},
		{Name: "s5-orphan-evaluators-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed5Generate, s5OrphanEvaluators)},
	}
	for i := range shapes {
		shapes[i].Seed0 = Sealed5Seed0 + uint64(i)*100_000
	}
	return shapes
}

// s5Limit bounds a growing run's length in seconds: a generator still
// under its instance by then has a bug, which the scoring harness reports.
const s5Limit = 4 * 3600

// sealed5Generate renders one run of s, its workload written by write, at hz (ShimHz or NVMLHz; both NVML-only). The
// device level is written on a 1/ShimHz grid, then read through the fifth
// set's own noise model:
//   - the instance shows a driver share of 2-30 MB from the start;
//   - the process's memory is mapped in granules the seed picks (512 KiB,
//     2 MiB twice as often, or 20 MiB);
//   - the counter trails the process by 0 to 3 ticks (drawn per run) and
//     reports whole MiB (mib);
//   - a math library's scratch buffer of 8-64 MB comes and goes on top
//     while the process holds memory (it appears on 0-5% of ticks and
//     stays 0.1-2 s), never past the instance;
//   - the poller reads 0-40 ms late on every poll, and now and then
//     stalls for 0.5-3 s (every 2-20 minutes on average), leaving no rows.
//
// At NVMLHz the series reads every tenth tick from a phase the seed picks.
// A growing run ends, at both rates, with its first tick over the
// instance, read at once as the bytes the driver refused; a quiet run
// lasts its planned length. Every draw in the reading loop is made at both
// rates, so the two series of a seed read the same levels.
func sealed5Generate(s SealedShape, write func(*s5Tape) float64, seed uint64, hz float64) SealedRun {
	r := rand.New(rand.NewPCG(s.Seed0+seed, sealed5Stream))
	p := &s5Tape{r: r, size: Sealed5Sizes[r.IntN(len(Sealed5Sizes))]}
	p.floor = p.draw(2e6, 30e6)
	planned := write(p)
	if !s.Growing {
		p.stay(planned - p.now())
	}
	granule := []float64{512 << 10, 2 << 20, 2 << 20, 20 << 20}[r.IntN(4)]
	lag := r.IntN(4)
	scratch, scratchOdds := p.draw(8e6, 64e6), p.draw(0, 0.05)
	late := p.draw(0, 0.04)
	stallMean := p.draw(120, 1200)
	phase := r.IntN(int(ShimHz))
	run := SealedRun{Trace: trace.Trace{Name: s.Name}, Capacity: uint64(p.size)}
	if s.WithHorizon {
		run.Horizon = planned
	}
	held := 0
	stallAt, stallEnd := stallMean*r.ExpFloat64(), 0.0
	for i, level := range p.ticks {
		t := float64(i) / ShimHz
		delay := late * r.Float64()
		if held > 0 {
			held--
		} else if r.Float64() < scratchOdds {
			held = 1 + r.IntN(20)
		}
		if t >= stallAt {
			stallEnd = t + p.draw(0.5, 3)
			stallAt = stallEnd + stallMean*r.ExpFloat64()
		}
		if p.floor+level > p.size {
			run.Trace.Rows = append(run.Trace.Rows, trace.Row{T: t + delay, Used: uint64(p.floor + level)})
			break
		}
		shown := p.floor
		if src := p.ticks[max(0, i-lag)]; src > 0 {
			shown = math.Min(shown+math.Ceil(src/granule)*granule, p.size)
			if held > 0 && shown+scratch <= p.size {
				shown += scratch
			}
		}
		read := hz > NVMLHz || i%int(ShimHz) == phase
		if read && t >= stallEnd {
			run.Trace.Rows = append(run.Trace.Rows, trace.Row{T: t + delay, Used: uint64(math.Floor(shown/mib) * mib)})
		}
	}
	return run
}

// s5Tape records one run's device level tick by tick (1/ShimHz s each),
// in bytes, without the driver's share.
type s5Tape struct {
	r     *rand.Rand
	size  float64 // the instance, bytes
	floor float64 // the driver's share of the instance, bytes
	level float64
	ticks []float64
}

func (p *s5Tape) now() float64 { return float64(len(p.ticks)) / ShimHz }

// draw is uniform on [lo, hi].
func (p *s5Tape) draw(lo, hi float64) float64 { return lo + (hi-lo)*p.r.Float64() }

// jitter multiplies x by a factor uniform on [1-f, 1+f].
func (p *s5Tape) jitter(x, f float64) float64 { return x * p.draw(1-f, 1+f) }

// stay holds the level for sec seconds.
func (p *s5Tape) stay(sec float64) {
	for n := int(math.Round(sec * ShimHz)); n > 0; n-- {
		p.ticks = append(p.ticks, p.level)
	}
}

// to sets the level at the next tick: one allocation or free.
func (p *s5Tape) to(v float64) {
	p.level = math.Max(v, 0)
	p.ticks = append(p.ticks, p.level)
}

// glide moves the level to v evenly over sec seconds, at least one tick.
func (p *s5Tape) glide(v, sec float64) {
	n := max(1, int(math.Round(sec*ShimHz)))
	from := p.level
	for i := 1; i <= n; i++ {
		p.to(from + (v-from)*float64(i)/float64(n))
	}
}

// copyIn adds b bytes at bps bytes a second (weights read and copied up).
func (p *s5Tape) copyIn(b, bps float64) { p.glide(p.level+b, b/bps) }

// over says whether the level (with the driver's share) has passed the
// instance.
func (p *s5Tape) over() bool { return p.floor+p.level > p.size }

// left is what remains before the instance is full.
func (p *s5Tape) left() float64 { return p.size - p.floor - p.level }

// context is a CUDA context of 0.25-0.7 GB, no more than at most of the
// instance, created in one tick.
func (p *s5Tape) context(most float64) {
	p.to(p.level + math.Min(p.draw(0.25e9, 0.7e9), most*p.size))
}

// start is the process coming up: nothing for 1-15 s (imports, reading
// its configuration), its CUDA context in one tick, then 0.5-4 s of setup.
// It returns the room a quiet shape may fill: what is left under 90% of
// the instance.
func (p *s5Tape) start() float64 {
	p.stay(p.draw(1, 15))
	p.context(0.07)
	p.stay(p.draw(0.5, 4))
	return 0.9*p.size - p.floor - p.level
}

// s5Events are growth events in a shape's own units: at times at
// (seconds, ascending), units[i] are added (negative: given back).
type s5Events struct {
	at, units []float64
}

func (e *s5Events) add(t, u float64) {
	e.at = append(e.at, t)
	e.units = append(e.units, u)
}

// scaleFor is the bytes per unit at which the highest total the events
// reach by time full is 2% over left, so the OOM falls near that time.
func (e *s5Events) scaleFor(full, left float64) float64 {
	sum, high := 0.0, 0.0
	for i, t := range e.at {
		if t > full {
			break
		}
		sum += e.units[i]
		high = math.Max(high, sum)
	}
	return 1.02 * left / math.Max(high, 1e-9)
}

// play adds the events at their times, scaled. With cached set, the device
// keeps the highest total so far (a caching allocator reuses what it
// freed and asks for more only past its peak); otherwise the level follows
// the total. Either way the device sees whole chunks. It stops once the
// level passes the instance.
func (p *s5Tape) play(e s5Events, scale, chunk float64, cached bool) {
	total, base := 0.0, p.level
	for i, t := range e.at {
		if p.over() || p.now() > s5Limit {
			return
		}
		p.stay(t - p.now())
		total = math.Max(total+e.units[i]*scale, 0)
		v := base + math.Ceil(total/chunk)*chunk
		if cached {
			v = math.Max(v, p.level)
		}
		if v != p.level {
			p.to(v)
		}
	}
}
