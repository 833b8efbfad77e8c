package tracegen

import (
	"math"
	"math/rand/v2"
)

// Sealed7Seed0 is where the seventh sealed set's seeds start, far from every
// earlier set's: the tuned shapes (0), the first sealed set (900 000), the
// held-out shapes (1 000 000), the third (4 400 000), second (7 300 000),
// fourth (12 600 000), fifth (23 900 000) and sixth (41 700 000) sealed
// sets. Shape i of Sealed7Shapes runs seeds Sealed7Seed0 + i*100 000 + seed.
const Sealed7Seed0 = 67_300_000

// The seventh set draws from three PCG streams of the same seed, so that
// what the workload does, what the device adds and how the poller reads
// never shift one another's draws: the world (the instance and the
// workload, "S7wd"), the device (its reservations, a co-resident process,
// transient allocations, "S7dv") and the poller ("S7pl").
const (
	sealed7World  = 0x53377764
	sealed7Device = 0x53376476
	sealed7Poller = 0x5337706c
)

// Sealed7Sizes are the instances the seventh sealed set runs on, in bytes
// (10^9 bytes a GB); each run draws one from its world stream, so 10 GB,
// the instance of issue 29's shapes, comes up in half the runs, 20 GB in a
// quarter, 5 and 40 GB in an eighth each.
var Sealed7Sizes = [...]float64{5e9, 10e9, 10e9, 10e9, 10e9, 20e9, 20e9, 40e9}

// Sealed7Shapes is the seventh sealed held-out set: six quiet shapes (a
// key-value cache held at its cap by preemption, gradient accumulation
// whose optimizer state comes late, an algorithm search asking for all
// that is free, decode buffers kept at their high-water mark; with a
// declared horizon, evaluations that generate text and weight averages
// started late) and six that grow to an OOM (hooks that pile up under a
// training sawtooth, a communicator created per call, a shared notebook
// host, graph pools kept on every adapter swap; with a declared horizon,
// progressive resizing and rollouts whose responses lengthen).
func Sealed7Shapes() []SealedShape {
	shapes := []SealedShape{
		{Name: "s7-kv-preempt-cap", render: renderWith(sealed7Generate, s7KVPreemptCap)},
		{Name: "s7-accum-first-step", render: renderWith(sealed7Generate, s7AccumFirstStep)},
		{Name: "s7-algo-search-spikes", render: renderWith(sealed7Generate, s7AlgoSearchSpikes)},
		{Name: "s7-decode-high-water", render: renderWith(sealed7Generate, s7DecodeHighWater)},
		{Name: "s7-eval-generate-ramps", WithHorizon: true, render: renderWith(sealed7Generate, s7EvalGenerateRamps)},
		{Name: "s7-weight-averaging", WithHorizon: true, render: renderWith(sealed7Generate, s7WeightAveraging)},
		{Name: "s7-hook-pileup", Growing: true, render: renderWith(sealed7Generate, s7HookPileup)},
		{Name: "s7-communicator-churn", Growing: true, render: renderWith(sealed7Generate, s7CommunicatorChurn)},
		{Name: "s7-notebook-tenants", Growing: true, render: renderWith(sealed7Generate, s7NotebookTenants)},
		{Name: "s7-adapter-graph-pools", Growing: true, render: renderWith(sealed7Generate, s7AdapterGraphPools)},
		{Name: "s7-progressive-resize-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed7Generate, s7ProgressiveResize)},
		{Name: "s7-rollout-length-horizon", Growing: true, WithHorizon: true, render: renderWith(sealed7Generate, s7RolloutLength)},
	}
	for i := range shapes {
		shapes[i].Seed0 = Sealed7Seed0 + uint64(i)*100_000
	}
	return shapes
}

// s7Limit bounds a growing run's length in seconds: a generator still
// under its instance by then has a bug, which the generator check reports.
const s7Limit = 4 * 3600

// s7Linger is how long a growing workload's line goes on past the moment
// it passes its instance, so that the reading always finds it over.
const s7Linger = 30

// sealed7Generate renders one run of s, its workload written by write, at hz (ShimHz or NVMLHz; both NVML-only). The
// workload's level is a line of points in continuous time (s7Line), read
// at every 1/ShimHz tick through the seventh set's own device and poller
// models:
//   - the instance shows 0.4-1.2% of its size as reserved from the first
//     reading, rounded to whole MiB;
//   - in two runs of three a co-resident helper process (a metrics
//     exporter, a sharing daemon) holds 60-250 MB from 0-30 s in, and
//     restarts every 10-40 minutes on average, gone for 2-8 s each time;
//   - while the workload holds memory, its framework's transient
//     allocations add 0 to 8-96 MB (drawn), redrawn at a tick with odds
//     0.05-0.5, in whole 2 MiB;
//   - the counter shows the device as it was 0-2 ticks before (drawn), in
//     whole MiB;
//   - the poller's clock runs 0-300 ppm fast or slow, each poll is taken
//     late by an exponential delay (mean 1-8 ms, at most 50 ms), 0.1-3% of
//     polls are lost one by one, and the agent stalls at exponential gaps
//     (mean 2-20 minutes) for log-normal times (median 0.3-2 s, at most
//     40 s), losing the polls it would have taken.
//
// At NVMLHz the series polls every tenth tick from a phase the poller
// draws. A growing run ends, at both rates, with its first tick over the
// instance, read at once as the bytes the driver refused; a quiet run
// lasts its planned length. Every stream makes the same draws at both
// rates, so the two series of a seed read the same levels.
func sealed7Generate(s SealedShape, write func(*s7Line) float64, seed uint64, hz float64) SealedRun {
	world := rand.New(rand.NewPCG(s.Seed0+seed, sealed7World))
	dev := newS7Device(rand.New(rand.NewPCG(s.Seed0+seed, sealed7Device)))
	poll := newS7Poller(rand.New(rand.NewPCG(s.Seed0+seed, sealed7Poller)))
	size := Sealed7Sizes[world.IntN(len(Sealed7Sizes))]
	dev.reserved = math.Round(size*dev.reserved/mib) * mib
	l := &s7Line{r: world, size: size, base: dev.reserved + dev.sidecar, pts: []s7Point{{}}}
	l.fixed = l.base + dev.chatter
	planned := write(l)
	end := planned
	if s.Growing {
		l.wait(s7Linger)
		end = l.t
	}
	var last [3]float64 // the device at the last three ticks, newest first
	k := 0
	return sampleSealed(s, size, planned, int(end*ShimHz), func(i int) (truth, shown, stamp float64, taken bool) {
		t := float64(i) / ShimHz
		truth = dev.tick(t, l.at(&k, t))
		last[2], last[1], last[0] = last[1], last[0], truth
		stamp, taken = poll.tick(i, t, hz)
		return truth, math.Floor(last[dev.lag]/mib) * mib, stamp, taken
	})
}

// s7Device is what the instance shows besides the workload.
type s7Device struct {
	r *rand.Rand
	// reserved is first the share of the instance the driver keeps, then
	// (once Generate knows the instance) those bytes.
	reserved float64
	// sidecar is what the co-resident process holds, 0 when there is none;
	// it comes at sideOn and restarts at exponential gaps of mean sideGap.
	sidecar, sideOn, sideGap float64
	nextRestart, downUntil   float64
	// chatter bounds the transient allocations; chatOdds is a tick's odds
	// of redrawing them.
	chatter, chatOdds, chat float64
	lag                     int
}

func newS7Device(r *rand.Rand) *s7Device {
	d := &s7Device{r: r, reserved: between(r, 0.004, 0.012)}
	if r.IntN(3) > 0 {
		d.sidecar = between(r, 60e6, 250e6)
	}
	d.sideOn, d.sideGap = between(r, 0, 30), between(r, 600, 2400)
	d.nextRestart = d.sideOn + d.sideGap*r.ExpFloat64()
	d.chatter, d.chatOdds = between(r, 8e6, 96e6), between(r, 0.05, 0.5)
	d.lag = r.IntN(3)
	return d
}

// tick returns what the device holds at t, the workload holding level.
func (d *s7Device) tick(t, level float64) float64 {
	if t >= d.nextRestart {
		d.downUntil = t + between(d.r, 2, 8)
		d.nextRestart = d.downUntil + d.sideGap*d.r.ExpFloat64()
	}
	if d.r.Float64() < d.chatOdds {
		d.chat = math.Floor(d.chatter*d.r.Float64()/(2*mib)) * 2 * mib
	}
	v := d.reserved + level
	if t >= d.sideOn && t >= d.downUntil {
		v += d.sidecar
	}
	if level > 0 {
		v += d.chat
	}
	return v
}

// s7Poller is the agent's NVML poller.
type s7Poller struct {
	r                     *rand.Rand
	skew, delay, dropOdds float64
	stallGap, stallMedian float64
	nextStall, stallEnd   float64
	phase                 int
}

func newS7Poller(r *rand.Rand) *s7Poller {
	p := &s7Poller{r: r, skew: between(r, -3e-4, 3e-4), delay: between(r, 0.001, 0.008), dropOdds: between(r, 0.001, 0.03)}
	p.stallGap, p.stallMedian = between(r, 120, 1200), between(r, 0.3, 2)
	p.nextStall, p.stallEnd = p.stallGap*r.ExpFloat64(), -1
	p.phase = r.IntN(int(ShimHz))
	return p
}

// tick returns the time stamp a poll due at tick i would carry, and
// whether a poll at rate hz is taken there.
func (p *s7Poller) tick(i int, t, hz float64) (float64, bool) {
	stamp := t*(1+p.skew) + math.Min(0.05, p.delay*p.r.ExpFloat64())
	lost := p.r.Float64() < p.dropOdds
	if t >= p.nextStall {
		p.stallEnd = t + math.Min(40, p.stallMedian*math.Exp(p.r.NormFloat64()))
		p.nextStall = p.stallEnd + p.stallGap*p.r.ExpFloat64()
	}
	due := hz > NVMLHz || i%int(ShimHz) == p.phase
	return stamp, due && !lost && t >= p.stallEnd
}

// s7Point is a corner of the workload's line: its level v at time t.
type s7Point struct{ t, v float64 }

// s7Line is the workload's level in bytes as a line through points in
// continuous time: straight between two points, a step where two share a
// time, flat after the last. A shape writes it forward from t; Generate
// reads it at every tick.
type s7Line struct {
	r    *rand.Rand
	size float64 // the instance, bytes
	// base is what the device holds besides the workload, bar the
	// transient allocations; fixed adds their bound.
	base, fixed float64
	t, v        float64
	pts         []s7Point
}

// at is the level at x, for x no earlier than the last call's; k keeps the
// place between calls.
func (l *s7Line) at(k *int, x float64) float64 {
	for *k+1 < len(l.pts) && l.pts[*k+1].t <= x {
		*k++
	}
	p := l.pts[*k]
	if *k+1 == len(l.pts) {
		return p.v
	}
	q := l.pts[*k+1]
	return p.v + (q.v-p.v)*(x-p.t)/(q.t-p.t)
}

func (l *s7Line) mark() {
	if n := len(l.pts); l.pts[n-1] != (s7Point{l.t, l.v}) {
		l.pts = append(l.pts, s7Point{l.t, l.v})
	}
}

// draw is uniform on [lo, hi], from the world stream.
func (l *s7Line) draw(lo, hi float64) float64 { return between(l.r, lo, hi) }

// vary multiplies x by a factor uniform on [1-f, 1+f].
func (l *s7Line) vary(x, f float64) float64 { return x * l.draw(1-f, 1+f) }

// spread is a log-normal factor of median 1 and spread s.
func (l *s7Line) spread(s float64) float64 { return math.Exp(s * l.r.NormFloat64()) }

// wait keeps the level for sec seconds.
func (l *s7Line) wait(sec float64) { l.t += math.Max(sec, 0) }

// jump makes the level v at once: one allocation or free.
func (l *s7Line) jump(v float64) {
	l.mark()
	l.v = math.Max(v, 0)
	l.mark()
}

// add allocates b bytes at once (frees, b < 0).
func (l *s7Line) add(b float64) { l.jump(l.v + b) }

// glide moves the level to v evenly over sec seconds.
func (l *s7Line) glide(v, sec float64) {
	if sec <= 0 {
		l.jump(v)
		return
	}
	l.mark()
	l.t += sec
	l.v = math.Max(v, 0)
	l.mark()
}

// load adds b bytes at bps bytes a second (weights read and copied up).
func (l *s7Line) load(b, bps float64) { l.glide(l.v+b, b/bps) }

// left is what remains before the instance is full, transient
// allocations aside.
func (l *s7Line) left() float64 { return l.size - l.base - l.v }

// over says whether the level has passed the instance.
func (l *s7Line) over() bool { return l.left() < 0 }

// room is what is left under 90% of the instance with every transient
// allocation in: all a quiet shape may fill.
func (l *s7Line) room() float64 { return 0.9*l.size - l.fixed - l.v }

// start is the process coming up: nothing for 1-30 s, a CUDA context of
// 0.25-0.7 GB (at most 5% of the instance) in one tick, the math
// libraries' handles (20-120 MB) 0.1-0.5 s later, then 0.5-5 s of setup.
// It returns the room a quiet shape may fill.
func (l *s7Line) start() float64 {
	l.wait(l.draw(1, 30))
	l.add(math.Min(l.draw(0.25e9, 0.7e9), 0.05*l.size))
	l.wait(l.draw(0.1, 0.5))
	l.add(l.draw(20e6, 120e6))
	l.wait(l.draw(0.5, 5))
	return l.room()
}

// weights loads a model of lo-hi of room at 1-3 GB/s and returns its
// bytes.
func (l *s7Line) weights(lo, hi, room float64) float64 {
	w := l.draw(lo, hi) * room
	l.load(w, l.draw(1e9, 3e9))
	return w
}

// firstStep is a training loop's first step of sec seconds: activations of
// a bytes, the gradients (w bytes, the weights') kept from its backward
// pass, then the optimizer's two moments (2w) at once.
func (l *s7Line) firstStep(a, w, sec float64) {
	l.step(l.v, a, w, sec)
	l.add(2 * w)
}

// step is one training step of sec seconds on a line at base: activations
// of a bytes built over the forward pass (35% of it), then freed over the
// backward pass while keep bytes (new gradients, captured tensors) appear.
// It says whether the peak passed the instance (the line then stays there).
func (l *s7Line) step(base, a, keep, sec float64) bool {
	l.glide(base+a, 0.35*sec)
	if l.over() {
		return true
	}
	l.glide(base+keep, 0.65*sec)
	return false
}
