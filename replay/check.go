package replay

import (
	"fmt"

	"github.com/migpro/migpro/partitioner"
)

// check verifies the invariants the simulation relies on, against the
// partitioner's own records: every active run holds an in-use instance that
// names it as owner, no instance holds two runs, no two instances of a GPU
// overlap, and no GPU's instances use more compute slices than it has.
func (e *engine) check() error {
	held := map[string]*run{}
	for r := range e.active {
		if o, dup := held[r.g.uuid]; dup {
			return fmt.Errorf("instance %s holds jobs %s and %s", r.g.uuid, o.j.job.ID, r.j.job.ID)
		}
		held[r.g.uuid] = r
	}
	inUse := 0
	for _, nd := range e.nodes {
		byGPU := map[int][]partitioner.Instance{}
		for _, in := range nd.part.Instances() {
			byGPU[in.GPU] = append(byGPU[in.GPU], in)
			if in.State != partitioner.InUse {
				continue
			}
			inUse++
			r, ok := held[in.UUID]
			if !ok {
				return fmt.Errorf("node %d: instance %s is in use by %s but no run holds it", nd.idx, in.UUID, in.Owner)
			}
			if in.Owner != r.j.job.ID {
				return fmt.Errorf("node %d: instance %s is owned by %s, run of %s holds it", nd.idx, in.UUID, in.Owner, r.j.job.ID)
			}
		}
		for g, list := range byGPU {
			slices := 0
			for i, a := range list {
				p, _ := e.model.Profile(a.Profile)
				slices += p.Slices
				for _, b := range list[i+1:] {
					if a.Placement.Overlaps(b.Placement) {
						return fmt.Errorf("node %d GPU %d: %s overlaps %s", nd.idx, g, a, b)
					}
				}
			}
			if slices > e.model.Slices {
				return fmt.Errorf("node %d GPU %d: instances use %d compute slices of %d", nd.idx, g, slices, e.model.Slices)
			}
		}
	}
	if inUse != len(held) {
		return fmt.Errorf("%d runs hold instances but %d instances are in use", len(held), inUse)
	}
	return nil
}
