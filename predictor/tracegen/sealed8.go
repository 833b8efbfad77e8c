package tracegen

import (
	"math"
	"math/rand/v2"
)

// Sealed8Seed0 is where the eighth sealed set's seeds start, far past every
// earlier set's: the tuned shapes (0), the first sealed set (900 000), the
// held-out shapes (1 000 000), the third (4 400 000), second (7 300 000),
// fourth (12 600 000), fifth (23 900 000), sixth (41 700 000) and seventh
// (67 300 000) sealed sets. Shape i of Sealed8Shapes runs seeds
// Sealed8Seed0 + i*100 000 + seed.
const Sealed8Seed0 = 108_500_000

// The eighth set draws each run from three PCG streams of the same seed,
// so that the workload, the device and the poller never shift one
// another's draws: the world (the instance and the workload, "s8W!"), the
// device (its reserve, a health probe, scratch allocations, the counter,
// "s8D!") and the poller ("s8P!").
const (
	sealed8World  = 0x73385721
	sealed8Device = 0x73384421
	sealed8Poller = 0x73385021
)

// Sealed8Sizes are the instances the eighth set runs on, in bytes (10^9
// bytes a GB), from the smallest MIG slice of a 40 GB card to a whole
// 80 GB card; each run draws one from its world stream, so 10 GB comes up
// in half the runs, 20 GB in 3 of 16, 40 and 80 GB in an eighth each and
// 5 GB in 1 of 16.
var Sealed8Sizes = [...]float64{
	5e9,
	10e9, 10e9, 10e9, 10e9, 10e9, 10e9, 10e9, 10e9,
	20e9, 20e9, 20e9,
	40e9, 40e9,
	80e9, 80e9,
}

// Sealed8Shapes is the eighth sealed held-out set: six quiet shapes
// (weights streamed layer by layer from the host, a table in managed
// memory paged in on first touch, serving under a traffic tide, a
// molecular-dynamics neighbour list with slack; with a declared horizon,
// post-training quantization layer by layer and a batch-size probe that
// bisects) and six that run out (a Gaussian-process surrogate's kernel
// matrix, world tiles streamed and never evicted, a recurrent state never
// detached, a server overloaded without back-pressure; with a declared
// horizon, adaptive mesh refinement and a metric that keeps every
// prediction). Each follows how a kind of workload is generally known to
// use GPU memory; docs/predictor-sealed8.md describes each shape and its
// parameters. Nobody tuning the predictor reads these generators or their
// results.
func Sealed8Shapes() []SealedShape {
	shapes := []SealedShape{
		{Name: "s8-offload-stream", render: renderWith(sealed8Generate, s8OffloadStream)},
		{Name: "s8-managed-pagein", render: renderWith(sealed8Generate, s8ManagedPageIn)},
		{Name: "s8-traffic-tide", render: renderWith(sealed8Generate, s8TrafficTide)},
		{Name: "s8-neighbor-list-slack", render: renderWith(sealed8Generate, s8NeighborList)},
		{Name: "s8-layerwise-quantize-horizon", WithHorizon: true, render: renderWith(sealed8Generate, s8LayerwiseQuantize)},
		{Name: "s8-batch-probe-horizon", WithHorizon: true, render: renderWith(sealed8Generate, s8BatchProbe)},
		{Name: "s8-kernel-matrix-rounds", Growing: true, render: renderWith(sealed8Generate, s8KernelRounds)},
		{Name: "s8-scene-tiles", Growing: true, render: renderWith(sealed8Generate, s8SceneTiles)},
		{Name: "s8-undetached-state", Growing: true, render: renderWith(sealed8Generate, s8UndetachedState)},
		{Name: "s8-overload-no-backpressure", Growing: true, render: renderWith(sealed8Generate, s8Overload)},
		{Name: "s8-mesh-refine-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed8Generate, s8MeshRefine)},
		{Name: "s8-metric-state-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed8Generate, s8MetricState)},
	}
	for i := range shapes {
		shapes[i].Seed0 = Sealed8Seed0 + uint64(i)*100_000
	}
	return shapes
}

// s8Limit bounds a growing run's length in seconds: a generator still under
// its instance by then has a bug, which the generator check reports.
const s8Limit = 3 * 3600

// s8Linger is how long a growing run's level is kept past its last write,
// so that the reading always finds it over the instance.
const s8Linger = 20

// sealed8Generate renders one run of s, its workload recorded by write, at
// hz (ShimHz or NVMLHz; both NVML-only). write records the workload's level
// on a tape and returns the run's planned length in seconds: a quiet run
// keeps its last level up to it; a growing one returns 0 or its declared
// length. The shape records the workload's level for every tick of a 1/ShimHz grid on
// a tape (s8Tape); each tick is read through the eighth set's own device
// and poller models:
//   - the driver's reserve shows from the first reading: 100-300 MB plus
//     0.1-0.5% of the instance, in whole 2 MiB;
//   - the workload's level shows rounded up to its allocator's segment,
//     2-32 MiB (drawn);
//   - in half the runs a node health probe runs a check in the instance
//     every 1-10 minutes (±20%), holding 16-96 MB for 0.3-3 s;
//   - while the workload holds memory, scratch allocations wander between
//     0 and a bound of 4-48 MB (a random walk, reflected, in whole
//     512 KiB);
//   - the counter refreshes every 1-3 ticks (drawn) and shows its last
//     refresh in whole 256 KiB;
//   - each poll is stamped late by a half-normal delay (σ 1-10 ms, at most
//     40 ms) on a clock that wanders 0-15 ms over 5-30 minutes; polls are
//     lost in bursts (a lossy spell starts at a tick with odds
//     0.0002-0.003 and ends with odds 1/2-1/15); in a third of the runs the
//     agent restarts at exponential gaps (mean 20-90 minutes), losing 4-25 s
//     of polls each time.
//
// At NVMLHz the series polls every tenth tick from a phase the poller
// draws. A growing run ends, at both rates, with its first tick over the
// instance, read at once as the bytes the driver refused; a quiet run
// lasts its planned length. Every stream makes the same draws at both
// rates, so the two series of a seed read the same levels.
func sealed8Generate(s SealedShape, write func(*s8Tape) float64, seed uint64, hz float64) SealedRun {
	world := rand.New(rand.NewPCG(s.Seed0+seed, sealed8World))
	dev := newS8Device(rand.New(rand.NewPCG(s.Seed0+seed, sealed8Device)))
	poll := newS8Poller(rand.New(rand.NewPCG(s.Seed0+seed, sealed8Poller)))
	size := Sealed8Sizes[world.IntN(len(Sealed8Sizes))]
	dev.reserve = math.Ceil((dev.reserve+size*dev.share)/(2*mib)) * 2 * mib
	p := &s8Tape{r: world, size: size, base: dev.reserve, fixed: dev.reserve + dev.bound()}
	planned := write(p)
	end := planned
	if s.Growing {
		p.hold(s8Linger)
		end = p.t
	}
	return sampleSealed(s, size, planned, int(end*ShimHz), func(i int) (truth, shown, stamp float64, taken bool) {
		t := float64(i) / ShimHz
		truth = dev.tick(t, p.at(i))
		shown = dev.read(i, truth)
		stamp, taken = poll.tick(i, t, hz)
		return truth, shown, stamp, taken
	})
}

// s8Device is what the instance shows besides the workload, and how its
// counter reads it.
type s8Device struct {
	r *rand.Rand
	// reserve is first a fixed part and share a part of the instance; once
	// Generate knows the instance, reserve is their sum in bytes.
	reserve, share float64
	// seg is the allocator's segment the workload's level is shown in.
	seg float64
	// probe is what the health probe holds (0: none), every probeGap
	// seconds on average.
	probe, probeGap, nextProbe, probeEnd float64
	// scratch wanders in [0, scratchMax] by steps of spread walk.
	scratch, scratchMax, walk float64
	// every and phase set the counter's refreshes; last is the refreshed
	// value.
	every, phase int
	last         float64
}

func newS8Device(r *rand.Rand) *s8Device {
	d := &s8Device{r: r, reserve: between(r, 100e6, 300e6), share: between(r, 0.001, 0.005)}
	d.seg = float64(1+r.IntN(16)) * 2 * mib
	if r.IntN(2) == 0 {
		d.probe = between(r, 16e6, 96e6)
	}
	d.probeGap = between(r, 60, 600)
	d.nextProbe = d.probeGap * between(r, 0.1, 1)
	d.scratchMax = between(r, 4e6, 48e6)
	d.walk = d.scratchMax * between(r, 0.02, 0.3)
	d.every = 1 + r.IntN(3)
	d.phase = r.IntN(d.every)
	return d
}

// bound is the most the device adds to the workload's level besides the
// reserve: the probe, the scratch and a segment's rounding.
func (d *s8Device) bound() float64 { return d.probe + d.scratchMax + d.seg }

// tick returns what the device holds at t, the workload holding level.
func (d *s8Device) tick(t, level float64) float64 {
	if d.probe > 0 && t >= d.nextProbe {
		d.probeEnd = t + between(d.r, 0.3, 3)
		d.nextProbe = t + d.probeGap*between(d.r, 0.8, 1.2)
	}
	d.scratch += d.walk * d.r.NormFloat64()
	if d.scratch < 0 {
		d.scratch = -d.scratch
	}
	if d.scratch > d.scratchMax {
		d.scratch = 2*d.scratchMax - d.scratch
	}
	d.scratch = math.Min(math.Max(d.scratch, 0), d.scratchMax)
	v := d.reserve + math.Ceil(level/d.seg)*d.seg
	if level > 0 {
		v += math.Floor(d.scratch/(mib/2)) * mib / 2
	}
	if t < d.probeEnd {
		v += d.probe
	}
	return v
}

// read returns what the counter shows at tick i, the device holding truth.
func (d *s8Device) read(i int, truth float64) float64 {
	if i == 0 || i%d.every == d.phase {
		d.last = truth
	}
	return math.Floor(d.last/(mib/4)) * mib / 4
}

// s8Poller is the agent's NVML poller.
type s8Poller struct {
	r *rand.Rand
	// jitter is the delay's spread; wander, period and offset the clock's
	// slow drift.
	jitter, wander, period, offset float64
	// fail and recover are a tick's odds of a lossy spell starting and
	// ending; lossy says one is on.
	fail, recover float64
	lossy         bool
	// restartGap is the mean gap between the agent's restarts (0: none).
	restartGap, nextRestart, downUntil float64
	phase                              int
}

func newS8Poller(r *rand.Rand) *s8Poller {
	p := &s8Poller{r: r, jitter: between(r, 0.001, 0.01), wander: between(r, 0, 0.015), period: between(r, 300, 1800)}
	p.offset = between(r, 0, 2*math.Pi)
	p.fail, p.recover = between(r, 0.0002, 0.003), 1/between(r, 2, 15)
	if r.IntN(3) == 0 {
		p.restartGap = between(r, 1200, 5400)
		p.nextRestart = p.restartGap * r.ExpFloat64()
	}
	p.phase = r.IntN(int(ShimHz))
	return p
}

// tick returns the time stamp a poll due at tick i would carry, and
// whether a poll at rate hz is taken there.
func (p *s8Poller) tick(i int, t, hz float64) (float64, bool) {
	delay := math.Min(0.04, math.Abs(p.jitter*p.r.NormFloat64()))
	stamp := t + delay + p.wander*(1+math.Sin(2*math.Pi*t/p.period+p.offset))/2
	if p.lossy {
		p.lossy = p.r.Float64() >= p.recover
	} else {
		p.lossy = p.r.Float64() < p.fail
	}
	if p.restartGap > 0 && t >= p.nextRestart {
		p.downUntil = t + between(p.r, 4, 25)
		p.nextRestart = p.downUntil + p.restartGap*p.r.ExpFloat64()
	}
	due := hz > NVMLHz || i%int(ShimHz) == p.phase
	return stamp, due && !p.lossy && t >= p.downUntil
}
