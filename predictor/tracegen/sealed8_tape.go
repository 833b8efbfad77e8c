package tracegen

import (
	"math"
	"math/rand/v2"
)

// s8Tape is the workload's level in bytes at every tick of the 1/ShimHz
// grid, written forward from a cursor t in continuous time: a change at t
// shows from the first tick at or after t, and a change shorter than a
// tick's spacing may fall between ticks and never show, as it would not to
// a poller. Past the last tick written the level is v.
type s8Tape struct {
	r    *rand.Rand
	size float64 // the instance, bytes
	// base is the driver's reserve; fixed adds the most the device's
	// other holders and the allocator's rounding can add.
	base, fixed float64
	t, v        float64
	lv          []float64 // lv[i] is the level at tick i
}

// at is the level at tick i.
func (p *s8Tape) at(i int) float64 {
	if i < len(p.lv) {
		return p.lv[i]
	}
	return p.v
}

// trace writes f(x), x the seconds since the cursor, at every tick of the
// next sec seconds, and moves the cursor past them.
func (p *s8Tape) trace(sec float64, f func(x float64) float64) {
	end := p.t + math.Max(sec, 0)
	for i := len(p.lv); float64(i)/ShimHz < end; i++ {
		p.lv = append(p.lv, math.Max(0, f(float64(i)/ShimHz-p.t)))
	}
	p.t = end
}

// hold keeps the level for sec seconds.
func (p *s8Tape) hold(sec float64) {
	v := p.v
	p.trace(sec, func(float64) float64 { return v })
}

// set makes the level v from the cursor on: one allocation or free.
func (p *s8Tape) set(v float64) { p.v = math.Max(v, 0) }

// add allocates b bytes at the cursor (frees, b < 0).
func (p *s8Tape) add(b float64) { p.set(p.v + b) }

// ramp moves the level evenly to v over sec seconds.
func (p *s8Tape) ramp(v, sec float64) {
	if sec <= 0 {
		p.set(v)
		return
	}
	from := p.v
	p.trace(sec, func(x float64) float64 { return from + (v-from)*x/sec })
	p.set(v)
}

// load copies b bytes up at bps bytes a second.
func (p *s8Tape) load(b, bps float64) { p.ramp(p.v+b, b/bps) }

// draw is uniform on [lo, hi], from the world stream.
func (p *s8Tape) draw(lo, hi float64) float64 { return between(p.r, lo, hi) }

// lognormal is a factor of median 1 and spread sigma, at most 4.
func (p *s8Tape) lognormal(sigma float64) float64 {
	return math.Min(4, math.Exp(sigma*p.r.NormFloat64()))
}

// left is what remains before the instance is full, the device's other
// holders aside.
func (p *s8Tape) left() float64 { return p.size - p.base - p.v }

// over says whether the level has passed the instance.
func (p *s8Tape) over() bool { return p.left() < 0 }

// room is what is left under 90% of the instance with everything the
// device may add counted: all a quiet shape may fill.
func (p *s8Tape) room() float64 { return 0.9*p.size - p.fixed - p.v }

// start is the process coming up: nothing for 2-40 s, a CUDA context of
// 0.28-0.55 GB (at most 4% of the instance) at once, then 2-5 modules
// loaded lazily as the first kernels run, 10-60 MB each, 0.2-1.5 s apart.
// It returns the room a quiet shape may fill.
func (p *s8Tape) start() float64 {
	p.hold(p.draw(2, 40))
	p.add(math.Min(p.draw(0.28e9, 0.55e9), 0.04*p.size))
	p.hold(p.draw(0.3, 2))
	for range 2 + p.r.IntN(4) {
		p.add(p.draw(10e6, 60e6))
		p.hold(p.draw(0.2, 1.5))
	}
	return p.room()
}

// copyUp loads lo-hi of room at 1-3 GB/s (weights, a base scene, a coarse
// grid) and returns its bytes.
func (p *s8Tape) copyUp(lo, hi, room float64) float64 {
	b := p.draw(lo, hi) * room
	p.load(b, p.draw(1e9, 3e9))
	return b
}

// tooth is one step of sec seconds over base: a bytes built over the
// first share of it, then given back. It says whether the peak passed the
// instance (the level then stays there).
func (p *s8Tape) tooth(base, a, share, sec float64) bool {
	p.ramp(base+a, share*sec)
	if p.over() {
		return true
	}
	p.ramp(base, (1-share)*sec)
	return false
}
