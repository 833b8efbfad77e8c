package tracegen

import (
	"math"
	"math/rand/v2"
)

// s9Work is what the workload asks of the device, in bytes, at every tick
// of the 1/ShimHz grid. The workload writes it forward from a cursor t in
// continuous time: what it asks from t on shows from the first tick at or
// after t, so something held for less than a tick's spacing may never
// show. Past the last tick written the level is v.
type s9Work struct {
	r    *rand.Rand
	size float64 // the instance, bytes
	// reserve is the driver's; extra the most the device's other holders
	// and its rounding add; over the allocator's largest factor over what
	// the workload asks.
	reserve, extra, over float64
	t, v                 float64
	ticks                []float64
}

// at is the level at tick i.
func (w *s9Work) at(i int) float64 {
	if i < len(w.ticks) {
		return w.ticks[i]
	}
	return w.v
}

// write sets every tick before until (seconds) not yet written to f of
// its time, and moves the cursor to until.
func (w *s9Work) write(until float64, f func(t float64) float64) {
	for i := len(w.ticks); float64(i)/ShimHz < until; i++ {
		w.ticks = append(w.ticks, math.Max(0, f(float64(i)/ShimHz)))
	}
	w.t = math.Max(w.t, until)
}

// wait holds the level for sec seconds.
func (w *s9Work) wait(sec float64) {
	v := w.v
	w.write(w.t+math.Max(sec, 0), func(float64) float64 { return v })
}

// alloc asks b more bytes from the cursor on (gives back, b < 0).
func (w *s9Work) alloc(b float64) { w.v = math.Max(0, w.v+b) }

// level makes the level v from the cursor on.
func (w *s9Work) level(v float64) { w.v = math.Max(0, v) }

// glide moves the level evenly to v over sec seconds.
func (w *s9Work) glide(v, sec float64) {
	if sec <= 0 {
		w.level(v)
		return
	}
	from, t0 := w.v, w.t
	w.write(t0+sec, func(t float64) float64 { return from + (v-from)*(t-t0)/sec })
	w.level(v)
}

// upload copies b bytes up at bps bytes a second.
func (w *s9Work) upload(b, bps float64) { w.glide(w.v+b, b/bps) }

// tooth asks amp bytes over the level, built over the first rise share of
// sec seconds and given back over the rest; the level is unchanged after.
func (w *s9Work) tooth(amp, rise, sec float64) {
	base, t0, up := w.v, w.t, rise*sec
	w.write(t0+sec, func(t float64) float64 {
		if x := t - t0; x < up {
			return base + amp*x/up
		}
		return base + amp*(1-(t-t0-up)/(sec-up))
	})
}

// limit is the level past which the instance cannot hold the workload's
// ask, the driver's reserve aside.
func (w *s9Work) limit() float64 { return w.size - w.reserve }

// left is what the workload may still ask before the instance is full.
func (w *s9Work) left() float64 { return w.limit() - w.v }

// refused asks b more bytes and says whether the instance cannot hold
// them: the level then stays at the refused ask.
func (w *s9Work) refused(b float64) bool {
	w.alloc(b)
	return w.v > w.limit()
}

// climbRefused is tooth for a growing shape: when the tooth's top would
// not fit, the level climbs to it and stays, and it says so.
func (w *s9Work) climbRefused(amp, rise, sec float64) bool {
	if w.v+amp > w.limit() {
		w.glide(w.v+amp, rise*sec)
		return true
	}
	w.tooth(amp, rise, sec)
	return false
}

// room is what the workload may still ask while staying under 90% of the
// instance with everything the device may add counted: all a quiet shape
// may fill.
func (w *s9Work) room() float64 { return (0.9*w.size-w.reserve-w.extra)/w.over - w.v }

// between is uniform on [lo, hi], from the workload's stream.
func (w *s9Work) between(lo, hi float64) float64 { return between(w.r, lo, hi) }

// spread is a log-normal factor of median 1 and spread sigma, within
// [1/bound, bound].
func (w *s9Work) spread(sigma, bound float64) float64 {
	return math.Min(bound, math.Max(1/bound, math.Exp(sigma*w.r.NormFloat64())))
}

// expo is exponential of mean m.
func (w *s9Work) expo(m float64) float64 { return m * w.r.ExpFloat64() }

// boot is the process coming up: nothing for 3-45 s, then its CUDA
// context, 0.25-0.45 GB (at most 5% of the instance), at once, and 0.5-3 s
// later the math libraries' handles and workspace, 40-200 MB (at most
// 1.5% of the instance), at the first kernels. It returns the room a quiet
// shape may fill.
func (w *s9Work) boot() float64 {
	w.wait(w.between(3, 45))
	w.alloc(math.Min(w.between(0.25e9, 0.45e9), 0.05*w.size))
	w.wait(w.between(0.5, 3))
	w.alloc(math.Min(w.between(40e6, 200e6), 0.015*w.size))
	w.wait(w.between(0.2, 2))
	return w.room()
}
