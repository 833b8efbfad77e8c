package replay

import "github.com/migpro/migpro/gpu"

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

// packKey is a GPU's held memory slots and free compute slices, under one
// GPU model, and the profiles wanted (bits by the node model's rank).
type packKey struct {
	model *Model
	held  uint16
	room  int
	want  uint64
}

// wantedNow is the set of profiles waiting in the queue, as packKey bits.
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
// legal placements of the wanted profiles in its free memory slots can use.
func (e *engine) stranded(m *Model, held uint16, slices int, want uint64) int {
	return m.Slices - slices - e.usableOn(m, held, slices, want)
}

// usableOn is usable for a GPU of model m whose instances hold the memory
// slots held and the compute slices slices.
func (e *engine) usableOn(m *Model, held uint16, slices int, want uint64) int {
	return e.usable(packKey{m, held, m.Slices - slices, want})
}

// usable is the most compute slices that instances placed in the free
// memory slots of k can use together, memoised per run.
func (e *engine) usable(k packKey) int {
	if v, ok := e.packMemo[k]; ok {
		return v
	}
	best := 0
	for _, p := range k.model.Profiles {
		if p.Slices > k.room || best == k.room || k.want&(1<<e.model.rank(p.Name)) == 0 {
			continue
		}
		for _, mask := range k.model.masks[p.Name] {
			if mask&k.held == 0 {
				best = max(best, p.Slices+e.usable(packKey{k.model, k.held | mask, k.room - p.Slices, k.want}))
			}
		}
	}
	if e.packMemo == nil {
		e.packMemo = map[packKey]int{}
	}
	e.packMemo[k] = best
	return best
}

// maskOf is a placement's memory slots as a bit mask.
func maskOf(p gpu.Placement) uint16 { return uint16((1<<p.Size - 1) << p.Start) }
