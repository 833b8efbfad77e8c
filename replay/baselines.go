package replay

import (
	"context"
	"fmt"
	"math/bits"
	"strings"

	"github.com/migpro/migpro/partitioner"
)

// Baselines that model what users run instead of migpro. They are models
// of those products' placement and lifecycle as their documentation and
// behaviour describe them, written for this simulator (simulator only: the
// agent does not offer them).
//
//   - nvidia-dra, NVIDIA's DRA driver for GPUs with dynamic MIG: an
//     instance is made when its claim is prepared and destroyed when it is
//     unprepared, so nothing idle is ever reused; devices are taken in name
//     order, which is the first GPU and the lowest placement start that is
//     free. Each node's choice is the first node that can serve.
//   - hami, HAMi's dynamic MIG mode with its placement scoring: on each
//     GPU the placement that leaves the largest run of free memory slots,
//     then the most legal placements of any profile; the GPU whose best
//     placement scores highest; 1g and 3g profiles taken from the high
//     end of the GPU. Instances are made when the pod is allocated and
//     destroyed when it ends.
//   - static: a fixed layout, as mig-parted applies under NVIDIA's device
//     plugin (policy Static, static.go).

// hamiPolicy is the hami baseline's placement, as a partitioner policy on
// one node. It scores placements by the node's held slots, which, since
// instances are destroyed at the end of their run, are every instance.
type hamiPolicy struct{ nd *node }

func (hamiPolicy) Name() string { return "hami" }

// hamiScore is how a placement leaves its GPU: the longest run of free
// memory slots and how many legal placements of any profile still fit.
type hamiScore struct{ run, legal int }

func (a hamiScore) beats(b hamiScore) bool {
	if a.run != b.run {
		return a.run > b.run
	}
	return a.legal > b.legal
}

// highEnd reports whether a profile is placed from the top of the GPU.
func highEnd(profile string) bool {
	return strings.HasPrefix(profile, "1g.") || strings.HasPrefix(profile, "3g.")
}

func (p hamiPolicy) Better(a, b partitioner.Candidate) bool {
	if a.Destroys != b.Destroys {
		return a.Destroys < b.Destroys
	}
	prof := p.nd.placing.Name
	if a.GPU != b.GPU {
		sa, sb := p.best(a.GPU, prof), p.best(b.GPU, prof)
		if sa != sb {
			return sa.beats(sb)
		}
		return a.GPU < b.GPU
	}
	if highEnd(prof) {
		return a.Start > b.Start
	}
	sa, sb := p.score(a.GPU, prof, a.Start), p.score(b.GPU, prof, b.Start)
	if sa != sb {
		return sa.beats(sb)
	}
	return a.Start < b.Start
}

// score is the hamiScore of profile placed at start on GPU g.
func (p hamiPolicy) score(g int, profile string, start int) hamiScore {
	gs := p.nd.gpus[g]
	m := gs.model
	held, slices := gs.heldSlots, gs.heldSlices
	if pr, ok := m.Profile(profile); ok {
		for _, mask := range m.geo.SlotMasks(profile) {
			if bits.TrailingZeros16(mask) == start {
				held |= mask
				slices += pr.Slices
				break
			}
		}
	}
	s := hamiScore{}
	cur := 0
	for i := 0; i < m.Slots; i++ {
		if held&(1<<i) == 0 {
			cur++
			s.run = max(s.run, cur)
		} else {
			cur = 0
		}
	}
	for _, pr := range m.Profiles {
		if slices+pr.Slices > m.Slices {
			continue
		}
		for _, mask := range m.geo.SlotMasks(pr.Name) {
			if mask&held == 0 {
				s.legal++
			}
		}
	}
	return s
}

// best is the highest score any free placement of profile reaches on GPU g.
func (p hamiPolicy) best(g int, profile string) hamiScore {
	gs := p.nd.gpus[g]
	var out hamiScore
	found := false
	for _, mask := range gs.model.geo.SlotMasks(profile) {
		if mask&gs.heldSlots != 0 {
			continue
		}
		s := p.score(g, profile, bits.TrailingZeros16(mask))
		if !found || s.beats(out) {
			out, found = s, true
		}
	}
	return out
}

// destroyAtEnd destroys a released instance, as the DRA driver and HAMi do
// when the claim or pod ends.
func (d *dynamic) destroyEnded(g grant) error {
	if err := d.nodes[g.node].part.Destroy(context.Background(), g.uuid); err != nil {
		return fmt.Errorf("node %d: destroy %s at the end of its run: %w", g.node, g.uuid, err)
	}
	return nil
}
