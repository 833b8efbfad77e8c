package tracegen

import (
	"math"
	"math/rand/v2"
)

// Sealed9Seed0 is where the ninth sealed set's seeds start, past every
// earlier set's: the tuned shapes (0), the first sealed set (900 000), the
// held-out shapes (1 000 000), the third (4 400 000), second (7 300 000),
// fourth (12 600 000), fifth (23 900 000), sixth (41 700 000), seventh
// (67 300 000) and eighth (108 500 000) sealed sets. Shape i of
// Sealed9Shapes runs seeds Sealed9Seed0 + i*100 000 + seed.
const Sealed9Seed0 = 176_000_000

// The ninth set draws each run from three PCG streams of the same seed, so
// that the workload, the device and the poller never shift one another's
// draws: the workload and its instance ("s9wk"), the device ("s9dv") and
// the poller ("s9pl").
const (
	sealed9World  = 0x7339776b
	sealed9Device = 0x73396476
	sealed9Poller = 0x7339706c
)

// Sealed9Sizes are the instances the ninth set runs on, in bytes (10^9
// bytes a GB); each run draws one from its workload stream: 10 GB in 5 of
// 16 runs, 20 GB in 3, 5, 40 and 80 GB in 2 each, 12 and 24 GB in 1 each.
var Sealed9Sizes = [...]float64{
	5e9, 5e9,
	10e9, 10e9, 10e9, 10e9, 10e9,
	12e9,
	20e9, 20e9, 20e9,
	24e9,
	40e9, 40e9,
	80e9, 80e9,
}

// Sealed9Shapes is the ninth sealed held-out set: six quiet shapes (a
// pipeline-parallel stage's activation stash, a caching allocator that
// reclaims its cache past a threshold, graph traversal queries on a
// resident graph, a self-play league of past policies kept up to a cap;
// with a declared horizon, structure prediction of targets sorted by
// length and k-fold cross-validation that keeps each fold's best model)
// and six that run out (physics-informed training that adds collocation
// points every round, a stream join whose watermark stalls, a search
// tree kept across analyses, per-task penalty anchors in continual
// learning; with a declared horizon, Gaussian-splat densification and
// neighbour sampling widened every epoch). Each follows how a kind of
// workload is generally known to use GPU memory;
// docs/predictor-sealed9.md describes each shape and its parameters.
// Nobody tuning the predictor reads these generators or their results.
func Sealed9Shapes() []SealedShape {
	shapes := []SealedShape{
		{Name: "s9-pipeline-1f1b-stash", render: renderWith(sealed9Generate, s9Pipeline1F1B)},
		{Name: "s9-allocator-reclaim-threshold", render: renderWith(sealed9Generate, s9AllocatorReclaim)},
		{Name: "s9-graph-traversal-queries", render: renderWith(sealed9Generate, s9GraphQueries)},
		{Name: "s9-selfplay-league-cap", render: renderWith(sealed9Generate, s9SelfPlayLeague)},
		{Name: "s9-fold-by-length-horizon", WithHorizon: true, render: renderWith(sealed9Generate, s9FoldByLength)},
		{Name: "s9-kfold-best-copy-horizon", WithHorizon: true, render: renderWith(sealed9Generate, s9KFoldBestCopy)},
		{Name: "s9-pinn-collocation-rounds", Growing: true, render: renderWith(sealed9Generate, s9PINNCollocation)},
		{Name: "s9-stalled-watermark", Growing: true, render: renderWith(sealed9Generate, s9StalledWatermark)},
		{Name: "s9-search-tree-reuse", Growing: true, render: renderWith(sealed9Generate, s9SearchTree)},
		{Name: "s9-continual-task-anchors", Growing: true, render: renderWith(sealed9Generate, s9TaskAnchors)},
		{Name: "s9-splat-densify-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed9Generate, s9SplatDensify)},
		{Name: "s9-fanout-widening-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed9Generate, s9FanoutWidening)},
	}
	for i := range shapes {
		shapes[i].Seed0 = Sealed9Seed0 + uint64(i)*100_000
	}
	return shapes
}

// s9Limit bounds a growing run's length in seconds: a generator still under
// its instance by then has a bug, which the generator check reports.
const s9Limit = 3 * 3600

// s9Linger is how long a growing run's refused level is kept past its
// last write, so that a reading always finds it over the instance.
const s9Linger = 15

// sealed9Generate renders one run of s at hz (ShimHz or NVMLHz; both
// NVML-only). write records the workload's level on a s9Work, tick by tick
// of a 1/ShimHz grid, and returns the run's planned length in seconds: a
// quiet run holds its last level up to it; a growing one returns 0 or its
// declared length. Each tick is read through the ninth set's own device
// and poller models:
//   - the driver's reserve shows from the first reading: 64-192 MiB plus
//     1.5-4 MiB per GB of the instance, in whole 2 MiB;
//   - the workload's allocator holds 0-3% more than the workload asks
//     (drawn per run), shown in whole 2 MiB; in half the runs it hands
//     freed memory back only 0.1-0.6 s later (the level it shows is the
//     highest of that span);
//   - in 40% of the runs a helper process in the pod holds a context of
//     180-350 MB from 20-900 s on, and restarts at exponential gaps (mean
//     10-40 minutes), gone for 1-6 s each time;
//   - the counter lags the device by 0-2 ticks (drawn) and shows whole MiB;
//   - each poll is stamped late by a log-normal delay (median 1.5-6 ms, σ
//     0.3-0.9, at most 70 ms) on a clock that runs 150 ppm slow to 150 ppm
//     fast; single polls are lost with odds 0.0005-0.01; the agent stalls
//     at exponential gaps (mean 3-20 minutes) for 0.4-3 s, losing those
//     polls; in a quarter of the runs it restarts at exponential gaps (mean
//     25-100 minutes), losing 6-40 s of polls each time.
//
// At NVMLHz the series polls every tenth tick from a phase the poller
// draws. A growing run ends, at both rates, with its first tick over the
// instance, read at once as the bytes the driver refused; a quiet run
// lasts its planned length. Every stream makes the same draws at both
// rates, so the two series of a seed read the same levels.
func sealed9Generate(s SealedShape, write func(*s9Work) float64, seed uint64, hz float64) SealedRun {
	world := rand.New(rand.NewPCG(s.Seed0+seed, sealed9World))
	dev := newS9Device(rand.New(rand.NewPCG(s.Seed0+seed, sealed9Device)))
	poll := newS9Poller(rand.New(rand.NewPCG(s.Seed0+seed, sealed9Poller)))
	size := Sealed9Sizes[world.IntN(len(Sealed9Sizes))]
	dev.fit(size)
	w := &s9Work{r: world, size: size, reserve: dev.reserve, extra: dev.helper + 2*mib, over: 1 + dev.overhead}
	planned := write(w)
	end := planned
	if s.Growing {
		w.wait(s9Linger)
		end = w.t
	}
	return sampleSealed(s, size, planned, int(end*ShimHz), func(i int) (truth, shown, stamp float64, taken bool) {
		t := float64(i) / ShimHz
		truth = dev.tick(t, w.at(i))
		shown = dev.read(i, truth)
		stamp, taken = poll.tick(i, t, hz)
		return truth, shown, stamp, taken
	})
}

// s9Device is what the instance holds besides the workload, and how its
// counter reads it.
type s9Device struct {
	r *rand.Rand
	// reserve is first a fixed part, perGB what each GB of the instance
	// adds; fit makes it the reserve in bytes.
	reserve, perGB float64
	// overhead is the allocator's share over what the workload asks;
	// hold is how many ticks it keeps what was freed (0: none), recent
	// the workload's last levels.
	overhead float64
	hold     int
	recent   []float64
	// helper is the helper process's context (0: none), from helperAt on,
	// gone from downAt to upAt, restarting every restartGap on average.
	helper, helperAt, downAt, upAt, restartGap float64
	// lag is how many ticks the counter lags; seen its last readings.
	lag  int
	seen [3]float64
}

func newS9Device(r *rand.Rand) *s9Device {
	d := &s9Device{r: r, reserve: between(r, 64*mib, 192*mib), perGB: between(r, 1.5*mib, 4*mib)}
	d.overhead = between(r, 0, 0.03)
	if r.IntN(2) == 0 {
		d.hold = 1 + r.IntN(6)
	}
	if r.Float64() < 0.4 {
		d.helper = between(r, 180e6, 350e6)
	}
	d.helperAt = between(r, 20, 900)
	d.restartGap = between(r, 600, 2400)
	d.downAt = d.helperAt + d.restartGap*r.ExpFloat64()
	d.lag = r.IntN(3)
	return d
}

// fit sets the reserve for an instance of size bytes.
func (d *s9Device) fit(size float64) {
	d.reserve = math.Ceil((d.reserve+d.perGB*size/1e9)/(2*mib)) * 2 * mib
}

// tick returns what the device holds at t, the workload asking level.
func (d *s9Device) tick(t, level float64) float64 {
	if d.hold > 0 {
		d.recent = append(d.recent, level)
		if len(d.recent) > d.hold+1 {
			d.recent = d.recent[1:]
		}
		for _, v := range d.recent {
			level = math.Max(level, v)
		}
	}
	v := d.reserve
	if level > 0 {
		v += math.Ceil(level*(1+d.overhead)/(2*mib)) * 2 * mib
	}
	if d.helper > 0 && t >= d.helperAt {
		if t >= d.downAt {
			d.upAt = t + between(d.r, 1, 6)
			d.downAt = d.upAt + d.restartGap*d.r.ExpFloat64()
		}
		if t >= d.upAt {
			v += d.helper
		}
	}
	return v
}

// read returns what the counter shows at tick i, the device holding truth.
func (d *s9Device) read(i int, truth float64) float64 {
	if i == 0 {
		d.seen = [3]float64{truth, truth, truth}
	}
	copy(d.seen[1:], d.seen[:2])
	d.seen[0] = truth
	return math.Floor(d.seen[d.lag]/mib) * mib
}

// s9Poller is the agent's NVML poller.
type s9Poller struct {
	r *rand.Rand
	// median and sigma set the log-normal delay; skew the clock's rate
	// error.
	median, sigma, skew float64
	// drop is a poll's odds of being lost alone.
	drop float64
	// stallGap is the mean gap between the agent's stalls; restartGap
	// between its restarts (0: none); downUntil ends the current one.
	stallGap, nextStall, restartGap, nextRestart, downUntil float64
	phase                                                   int
}

func newS9Poller(r *rand.Rand) *s9Poller {
	p := &s9Poller{r: r, median: between(r, 0.0015, 0.006), sigma: between(r, 0.3, 0.9), skew: between(r, -150e-6, 150e-6)}
	p.drop = between(r, 0.0005, 0.01)
	p.stallGap = between(r, 180, 1200)
	p.nextStall = p.stallGap * r.ExpFloat64()
	if r.IntN(4) == 0 {
		p.restartGap = between(r, 1500, 6000)
		p.nextRestart = p.restartGap * r.ExpFloat64()
	}
	p.phase = r.IntN(int(ShimHz))
	return p
}

// tick returns the time stamp a poll due at tick i would carry, and
// whether a poll at rate hz is taken there.
func (p *s9Poller) tick(i int, t, hz float64) (float64, bool) {
	delay := math.Min(0.07, p.median*math.Exp(p.sigma*p.r.NormFloat64()))
	stamp := (t + delay) * (1 + p.skew)
	lost := p.r.Float64() < p.drop
	if t >= p.nextStall {
		p.downUntil = math.Max(p.downUntil, t+between(p.r, 0.4, 3))
		p.nextStall = t + p.stallGap*p.r.ExpFloat64()
	}
	if p.restartGap > 0 && t >= p.nextRestart {
		p.downUntil = math.Max(p.downUntil, t+between(p.r, 6, 40))
		p.nextRestart = p.downUntil + p.restartGap*p.r.ExpFloat64()
	}
	due := hz > NVMLHz || i%int(ShimHz) == p.phase
	return stamp, due && !lost && t >= p.downUntil
}
