package tracegen

import (
	"math"
	"sort"
)

// The growing shapes of the third sealed set: each runs out of its
// instance and must be marked before it does (at least 5 s ahead at the
// shim's rate; with a declared horizon, by a quarter of its way to the
// OOM). Most are written as a process of growth events in abstract units,
// scaled by scaleToOOM so that the instance fills after a drawn time;
// docs/predictor-sealed3.md says what each one follows.

// s3Segment is a caching allocator's segment on instance size: 2 MB, or
// 0.05% to 0.4% of the instance when that is larger.
func (l *s3Levels) s3Segment() float64 {
	return math.Max(2e6, l.uniform(0.0005, 0.004)*l.size)
}

// s3RequestLeak: a server under bursty traffic (busy spells of seconds to a
// minute, quiet spells of up to two minutes) that leaks a little with every
// request it serves (a per-request object kept in a registry); the leaked
// bytes fill the instance 3 to 20 minutes after it starts serving.
func s3RequestLeak(l *s3Levels) float64 {
	room := l.boot()
	l.load(l.uniform(0.2, 0.5)*room, l.uniform(1, 4)*1e9, 1+l.r.IntN(4))
	l.set(l.at + l.uniform(0.02, 0.1)*room)
	l.idle(l.uniform(5, 60))
	t0, ttl := l.clock(), l.uniform(180, 1200)
	busy, quiet, perSec := l.uniform(5, 60), l.uniform(5, 120), l.uniform(1, 8)
	var ev []s3Event
	for t, on := t0, l.r.IntN(2) == 0; t < t0+3*ttl; on = !on {
		if !on {
			t += quiet * l.r.ExpFloat64()
			continue
		}
		end := t + busy*l.r.ExpFloat64()
		for t += l.r.ExpFloat64() / perSec; t < end; t += l.r.ExpFloat64() / perSec {
			ev = append(ev, s3Event{t: t, units: l.logNormal(0.5)})
		}
	}
	l.playUntilOOM(l.at, l.s3Segment(), scaled(ev, scaleToOOM(ev, t0, ttl, l.size-l.at)), nil)
	return 0
}

// s3ShapeCache: a just-in-time compiler that keeps a compiled graph (and
// its workspace) for every input shape it has seen, with inputs whose
// shapes keep changing; each new shape costs a compile, during which a
// temporary workspace is held, and leaves its graph behind.
func s3ShapeCache(l *s3Levels) float64 {
	room := l.boot()
	l.load(l.uniform(0.15, 0.45)*room, l.uniform(1, 4)*1e9, 1+l.r.IntN(3))
	l.idle(l.uniform(2, 30))
	t0, ttl := l.clock(), l.uniform(120, 900)
	gap := l.uniform(1, 10)
	var ev []s3Event
	for t := t0 + gap*l.r.ExpFloat64(); t < t0+3*ttl; t += math.Max(0.1, gap*l.r.ExpFloat64()) {
		ev = append(ev, s3Event{t: t, units: l.logNormal(0.7)})
	}
	workspace := l.uniform(0.005, 0.03) * l.size
	l.playUntilOOM(l.at, 2e6, scaled(ev, scaleToOOM(ev, t0, ttl, l.size-l.at)), func() float64 {
		return workspace * l.uniform(0.3, 1)
	})
	return 0
}

// s3BatchAutotune: a batch-size finder that runs a few steps at each
// batch size, frees its activations, and tries a batch a fixed factor
// larger, until one does not fit.
func s3BatchAutotune(l *s3Levels) float64 {
	room := l.boot()
	l.load(l.uniform(0.2, 0.45)*room, l.uniform(1, 3)*1e9, 1+l.r.IntN(3))
	l.idle(l.uniform(2, 15))
	base := l.at
	act, factor := l.uniform(0.03, 0.1)*room, l.uniform(1.15, 1.5)
	trial := l.uniform(4, 25)
	for l.at <= l.size && l.clock() < s3Cap {
		l.move(base+act, l.uniform(0.3, 2))
		if l.at > l.size {
			break
		}
		l.idle(trial * l.uniform(0.8, 1.2))
		l.set(base)
		l.idle(l.uniform(0.5, 3))
		act *= factor
	}
	return 0
}

// s3ChatSessions: a chat server that allocates key-value blocks on demand
// and never ends a session: sessions arrive at random, each user sends a
// message every so often, and every message adds its tokens' blocks to
// that session's cache, so the growth speeds up as sessions pile up.
func s3ChatSessions(l *s3Levels) float64 {
	room := l.boot()
	l.load(l.uniform(0.2, 0.5)*room, l.uniform(1, 4)*1e9, 1+l.r.IntN(6))
	l.idle(l.uniform(3, 30))
	t0, ttl := l.clock(), l.uniform(180, 1200)
	arrive, turn := l.uniform(5, 40), l.uniform(10, 90)
	var ev []s3Event
	end := t0 + 2*ttl // the growth speeds up: twice ttl is more than enough
	for s := t0 + arrive*l.r.ExpFloat64(); s < end; s += arrive * l.r.ExpFloat64() {
		every := turn * l.logNormal(0.4)
		for t := s; t < end; t += every * l.uniform(0.5, 1.5) {
			ev = append(ev, s3Event{t: t, units: l.logNormal(0.8)})
		}
	}
	sort.Slice(ev, func(i, j int) bool { return ev[i].t < ev[j].t })
	seg := l.uniform(16e6, 64e6)
	l.playUntilOOM(l.at, seg, scaled(ev, scaleToOOM(ev, t0, ttl, l.size-l.at)), nil)
	return 0
}

// s3LoggedTensors: a training Job that declares its planned length and
// appends every step's loss, still attached to its graph, to a list it
// logs later, so each step keeps a little of its activations alive; it
// runs out at 30% to 85% of its planned length.
func s3LoggedTensors(l *s3Levels) float64 {
	room := l.boot()
	planned := l.uniform(900, 3600)
	oomAt := l.uniform(0.3, 0.85) * planned
	l.load(l.uniform(0.25, 0.5)*room, l.uniform(1, 3)*1e9, 1+l.r.IntN(4))
	l.idle(l.uniform(1, 10))
	l.move(l.at+l.uniform(0.1, 0.25)*room, l.uniform(0.3, 2))
	t0 := l.clock()
	ttl := math.Max(oomAt-t0, 60)
	period := l.uniform(0.5, 4)
	var ev []s3Event
	for t := t0 + period; t < t0+3*ttl; t += period * l.uniform(0.9, 1.1) {
		ev = append(ev, s3Event{t: t, units: l.logNormal(0.2)})
	}
	l.playUntilOOM(l.at, l.s3Segment(), scaled(ev, scaleToOOM(ev, t0, ttl, l.size-l.at)), nil)
	return planned
}

// s3KeptOutputs: a batch inference Job that declares its planned length
// and keeps every batch's outputs on the device until the end; its data is
// sorted by length, so later batches leave more behind; it runs out at 35%
// to 85% of its planned length.
func s3KeptOutputs(l *s3Levels) float64 {
	room := l.boot()
	planned := l.uniform(600, 2400)
	oomAt := l.uniform(0.35, 0.85) * planned
	l.load(l.uniform(0.2, 0.5)*room, l.uniform(1, 4)*1e9, 1+l.r.IntN(4))
	l.set(l.at + l.uniform(0.05, 0.15)*room)
	t0 := l.clock()
	ttl := math.Max(oomAt-t0, 60)
	batch, longer := l.uniform(0.5, 5), l.uniform(0, 2)
	var ev []s3Event
	for t := t0 + batch; t < t0+3*ttl; t += batch * l.uniform(0.7, 1.3) {
		ev = append(ev, s3Event{t: t, units: (1 + longer*(t-t0)/ttl) * l.logNormal(0.5)})
	}
	seg := l.uniform(20e6, 100e6)
	l.playUntilOOM(l.at, seg, scaled(ev, scaleToOOM(ev, t0, ttl, l.size-l.at)), nil)
	return planned
}

// scaled returns events with their units multiplied by k (bytes).
func scaled(ev []s3Event, k float64) []s3Event {
	out := make([]s3Event, len(ev))
	for i, e := range ev {
		out[i] = s3Event{t: e.t, units: e.units * k}
	}
	return out
}
