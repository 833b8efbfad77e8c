package replay

import "github.com/migpro/migpro/partitioner/geometry"

// Packing first (policies with PackFirst). Arrival order with backfill
// hands room that frees up to the oldest job that fits, wherever the
// partitioner puts it. On an A100 two 3g.20gb instances hold all eight
// memory slots and six of the seven compute slices: the seventh idles while
// both run, however many 1g requests wait. A scan under PackFirst first
// serves, in queue order, the waiting jobs whose placement leaves every
// free compute slice usable by the requests waiting, and only then the
// others, in queue order as before. Nothing is held back: a job that
// strands a slice still starts in the same scan if it fits after the
// others. A slice counts as usable when some combination of placements of
// the profiles waiting, in the GPU's free memory slots, could use it: a
// slice only a profile nobody asks for could use is already lost.

// shapeKey is a set of wanted profiles (bits by the node model's rank)
// on one GPU model.
type shapeKey struct {
	model *Model
	want  uint64
}

// wantedNow is the set of profiles waiting in the queue, as rank bits.
func (e *engine) wantedNow() uint64 {
	var want uint64
	for _, j := range e.queue {
		want |= 1 << e.model.rank(j.profile.Name)
	}
	return want
}

// strands reports whether offer o for j leaves compute slices of its GPU
// that no placement of a waiting profile can use while the instances held
// there stay, and that could be used before it.
func (e *engine) strands(o offer, j *jobState) bool {
	if o.mask == 0 {
		return false
	}
	gs := e.nodes[o.node].gpus[o.gpu]
	return e.stranded(gs.model, gs.heldSlots|o.mask, gs.heldSlices+j.profile.Slices, e.packWant) >
		e.stranded(gs.model, gs.heldSlots, gs.heldSlices, e.packWant)
}

// stranded is how many of a GPU's free compute slices no combination of
// legal placements of the wanted profiles in its free memory slots can use
// (geometry.Stranded).
func (e *engine) stranded(m *Model, held uint16, slices int, want uint64) int {
	return m.geo.Stranded(held, slices, e.shapes(m, want))
}

// usableOn is geometry.Usable for a GPU of model m whose instances hold the
// memory slots held and the compute slices slices.
func (e *engine) usableOn(m *Model, held uint16, slices int, want uint64) int {
	return m.geo.Usable(held, slices, e.shapes(m, want))
}

// shapes is the shapes of model m's geometry that the wanted profiles take.
func (e *engine) shapes(m *Model, want uint64) geometry.ShapeSet {
	k := shapeKey{m, want}
	if s, ok := e.packShapes[k]; ok {
		return s
	}
	var s geometry.ShapeSet
	for i, p := range e.model.sizes {
		if want&(1<<i) != 0 {
			s |= m.geo.ShapesOf(p.Name)
		}
	}
	if e.packShapes == nil {
		e.packShapes = map[shapeKey]geometry.ShapeSet{}
	}
	e.packShapes[k] = s
	return s
}
