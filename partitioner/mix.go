package partitioner

import (
	"maps"
	"math"
	"time"

	"github.com/migpro/migpro/partitioner/geometry"
)

// The workload mix. The migpro policy values a GPU's free room by what the
// node is asked for: the recent mix of requests it served, decaying so an old
// burst fades, plus the requests waiting right now (fed by the caller
// through ObservePending). A profile only some GPUs of a mixed node offer is
// worth more on each of those GPUs: its share of the mix is split among fewer
// of them.

const (
	// mixHalfLife is how long it takes an old request's weight in the
	// recent mix to halve.
	mixHalfLife = 30 * time.Minute
	// mixPrior is the weight every offered profile keeps whatever the
	// mix, so a profile not asked for lately is not given up for nothing.
	mixPrior = 0.15
	// pendingWeight is how much all waiting requests together weigh against
	// the whole recent mix (which sums to 1).
	pendingWeight = 2.0
)

// mix is the node's workload mix: how much each profile is wanted. The
// caller holds p.mu.
type mix struct {
	recent  map[string]float64 // decayed counts of served requests
	asked   map[string]bool    // every profile served since the start
	total   float64            // sum of recent
	last    time.Time          // when recent was last decayed
	pending map[string]int     // requests waiting now, by profile
	npend   int
	// weights caches each slot's per-shape weight vector; nil when stale.
	weights [][]float64
	// wanted caches each slot's capacity for its wanted shapes (see
	// wants); valid with weights.
	wanted []*geometry.Wanted
}

// observe records a request for profile served at now. The older ones
// decay by the time since the last: shares do not change while no request
// comes, so decaying only here is enough.
func (d *mix) observe(profile string, now time.Time) {
	if d.recent == nil {
		d.recent = map[string]float64{}
	}
	if d.asked == nil {
		d.asked = map[string]bool{}
	}
	if dt := now.Sub(d.last); !d.last.IsZero() && dt > 0 {
		f := math.Exp2(-float64(dt) / float64(mixHalfLife))
		for k := range d.recent {
			d.recent[k] *= f
		}
		d.total *= f
	}
	d.last = now
	d.total++
	d.recent[profile]++
	d.asked[profile] = true
	d.weights = nil
}

// setPending replaces the pending requests.
func (d *mix) setPending(counts map[string]int) {
	if maps.Equal(counts, d.pending) {
		return
	}
	d.pending = maps.Clone(counts)
	d.npend = 0
	for _, n := range counts {
		d.npend += n
	}
	d.weights = nil
}

// none reports whether there is no mix to weigh: no request served and
// none waiting. The migpro policy then places as reachability does.
func (d *mix) none() bool { return d.total == 0 && d.npend == 0 }

// of is how much profile is wanted: the prior, its share of the recent mix
// and its share of the pending requests.
func (d *mix) of(profile string) float64 {
	w := mixPrior
	if d.total > 0 {
		w += d.recent[profile] / d.total
	}
	if d.npend > 0 {
		w += pendingWeight * float64(d.pending[profile]) / float64(d.npend)
	}
	return w
}

// wants reports whether profile is asked for: served since the partitioner
// started, or waiting now. A profile the node was never asked for is wanted
// only by the prior.
func (d *mix) wants(profile string) bool {
	return d.asked[profile] || d.pending[profile] > 0
}

// capacity is a slot's demand-weighted capacity in state st
// (geometry.Wanted.Capacity with the slot's wanted shapes). The caller holds
// p.mu and has called shapeWeights.
func (p *Partitioner) capacity(i int, st geometry.State) float64 {
	return p.mix.wanted[i].Capacity(st, p.mix.weights[i])
}

// shapeWeights returns, per slot, each shape's weight: the mix weight of its
// profiles, each divided by how many GPUs of the node offer it, times the
// shape's compute slices. Slots share their vectors: they are read only.
// The caller holds p.mu.
func (p *Partitioner) shapeWeights() [][]float64 {
	d := &p.mix
	if d.weights != nil {
		return d.weights
	}
	offeredBy := map[string]int{}
	for _, s := range p.slots {
		for name := range s.profiles {
			offeredBy[name]++
		}
	}
	d.weights = make([][]float64, len(p.slots))
	d.wanted = make([]*geometry.Wanted, len(p.slots))
	for i, s := range p.slots {
		if i > 0 && s.geo == p.slots[i-1].geo {
			// The weights and wanted shapes depend on the geometry
			// alone: GPUs of one model share them.
			d.weights[i], d.wanted[i] = d.weights[i-1], d.wanted[i-1]
			continue
		}
		w := make([]float64, len(s.geo.Shapes))
		var wanted geometry.ShapeSet
		for _, sh := range s.geo.Shapes {
			for _, name := range sh.Profiles {
				w[sh.Index] += d.of(name) / float64(offeredBy[name])
				if d.wants(name) {
					wanted |= 1 << sh.Index
				}
			}
			w[sh.Index] *= float64(sh.Slices)
		}
		d.weights[i] = w
		d.wanted[i] = s.geo.Wanting(wanted)
	}
	return d.weights
}

// ObservePending tells the partitioner which requests are waiting now, by
// profile (e.g. pods the agent could not place yet, migctl alloc callers
// waiting). It replaces the previous counts; nil clears them. The migpro
// policy keeps room for them when it places other requests.
func (p *Partitioner) ObservePending(counts map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mix.setPending(counts)
}

// Mix reports the weight the migpro policy gives each offered profile now
// (its share of the workload mix), for status pages and tests.
func (p *Partitioner) Mix() map[string]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]float64{}
	for _, name := range p.profiles {
		out[name] = p.mix.of(name)
	}
	return out
}
