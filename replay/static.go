package replay

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
)

// Layout is a fixed MIG geometry applied once before any job runs, the way
// mig-parted and the device plugin's mixed strategy are used. Each GPU gets
// one of the per-GPU patterns, in turn. A pattern lists compute-slice sizes,
// largest first, then a fill size repeated until the GPU has no room for it.
type Layout struct {
	Name string
	// Patterns are per-GPU slice lists; GPU i gets Patterns[i%len].
	Patterns []pattern
}

type pattern struct {
	sizes []int
	fill  int // repeated until it no longer fits; 0 for none
}

// full is the whole-GPU pattern on any model.
const full = -1

// Layouts lists the static layouts policy 2 chooses from: the mig-parted
// standard configurations (all-1g, all-2g, all-3g, all-balanced, all the
// whole GPU) and mixes that keep whole GPUs for large jobs.
func Layouts() []Layout {
	one := pattern{fill: 1}
	three := pattern{fill: 3}
	bal := pattern{sizes: []int{3, 2, 1}, fill: 1}
	whole := pattern{sizes: []int{full}}
	return []Layout{
		{Name: "all-1g", Patterns: []pattern{one}},
		{Name: "all-2g", Patterns: []pattern{{fill: 2}}},
		{Name: "all-3g", Patterns: []pattern{three}},
		{Name: "all-balanced", Patterns: []pattern{bal}},
		{Name: "all-full", Patterns: []pattern{whole}},
		{Name: "balanced+full", Patterns: []pattern{bal, whole}},
		{Name: "1g+full", Patterns: []pattern{one, whole}},
		{Name: "3g+full", Patterns: []pattern{three, whole}},
		{Name: "balanced×3+full", Patterns: []pattern{bal, bal, bal, whole}},
	}
}

// LayoutByName finds a static layout.
func LayoutByName(name string) (Layout, error) {
	var names []string
	for _, l := range Layouts() {
		if l.Name == name {
			return l, nil
		}
		names = append(names, l.Name)
	}
	return Layout{}, fmt.Errorf("unknown static layout %q (known: %s)", name, strings.Join(names, ", "))
}

// staticInst is one pre-made instance.
type staticInst struct {
	gpu     int
	uuid    string
	profile Profile
	place   gpu.Placement
	busy    bool
}

// static hands out pre-made instances and never reconfigures.
type static struct {
	nodes []*node
	model *Model
	insts [][]*staticInst // per node, tightest first
	byID  map[string]*staticInst
}

// sliceProfile is the plain profile with that many slices and the least
// memory (1 → 1g.5gb on an A100-40GB), or the whole GPU for full.
func (m *Model) sliceProfile(slices int) (Profile, bool) {
	if slices == full {
		return m.Full, true
	}
	var best Profile
	found := false
	for _, p := range m.Profiles {
		if p.Slices == slices && (!found || p.Memory < best.Memory) {
			best, found = p, true
		}
	}
	return best, found
}

// newStatic creates the layout on every GPU through each node's partitioner
// (pinned creates, left idle) and returns the setup steps per global GPU.
func newStatic(nodes []*node, model *Model, l Layout) (*static, map[int][]partitioner.Step, error) {
	s := &static{nodes: nodes, model: model, insts: make([][]*staticInst, len(nodes)), byID: map[string]*staticInst{}}
	steps := map[int][]partitioner.Step{}
	for _, nd := range nodes {
		for li, g := range nd.gpus {
			pat := l.Patterns[g.global%len(l.Patterns)]
			for _, size := range pat.sizes {
				if _, err := s.create(nd, li, size, steps); err != nil {
					return nil, nil, fmt.Errorf("layout %s: %w", l.Name, err)
				}
			}
			for pat.fill != 0 {
				ok, err := s.create(nd, li, pat.fill, steps)
				if err != nil {
					return nil, nil, fmt.Errorf("layout %s: %w", l.Name, err)
				}
				if !ok {
					break
				}
			}
		}
	}
	for _, list := range s.insts {
		sort.SliceStable(list, func(i, j int) bool {
			a, b := list[i], list[j]
			if a.profile.Memory != b.profile.Memory {
				return a.profile.Memory < b.profile.Memory
			}
			if a.profile.Slices != b.profile.Slices {
				return a.profile.Slices < b.profile.Slices
			}
			if a.gpu != b.gpu {
				return a.gpu < b.gpu
			}
			return a.place.Start < b.place.Start
		})
	}
	return s, steps, nil
}

// create makes one instance of the given size on a GPU at the first legal
// start that is free; false when none is (or the model has no such size).
func (s *static) create(nd *node, gpuIdx, size int, steps map[int][]partitioner.Step) (bool, error) {
	if gpuIdx >= len(nd.gpus) {
		return false, fmt.Errorf("node %d has no GPU %d", nd.idx, gpuIdx)
	}
	prof, ok := nd.gpus[gpuIdx].model.sliceProfile(size)
	if !ok {
		return false, nil
	}
	devs := nd.sim.Devices()
	if gpuIdx >= len(devs) {
		return false, fmt.Errorf("node %d has no GPU %d", nd.idx, gpuIdx)
	}
	dev := devs[gpuIdx]
	profs, err := dev.Profiles()
	if err != nil {
		return false, fmt.Errorf("node %d GPU %d: %w", nd.idx, gpuIdx, err)
	}
	for _, p := range profs {
		if p.Name != prof.Name {
			continue
		}
		for _, pl := range p.Placements {
			if s.occupied(nd.idx, dev.Index(), pl) {
				continue
			}
			pin := &partitioner.Pin{GPU: dev.Index(), Start: pl.Start}
			inst, plan, err := nd.part.AllocateAt(context.Background(), prof.Name, pin, "")
			if errors.Is(err, partitioner.ErrMustWait) {
				continue
			}
			if err != nil {
				return false, fmt.Errorf("node %d GPU %d: create %s at %d: %w", nd.idx, gpuIdx, prof.Name, pl.Start, err)
			}
			if len(plan.Steps) != 1 || plan.Steps[0].Kind != partitioner.StepCreate {
				return false, fmt.Errorf("node %d GPU %d: creating %s planned %s, want one create", nd.idx, gpuIdx, prof.Name, plan)
			}
			g := nd.gpus[gpuIdx].global
			steps[g] = append(steps[g], plan.Steps...)
			si := &staticInst{gpu: inst.GPU, uuid: inst.UUID, profile: prof, place: inst.Placement}
			s.insts[nd.idx] = append(s.insts[nd.idx], si)
			s.byID[inst.UUID] = si
			nd.used += prof.Slices
			return true, nil
		}
	}
	return false, nil
}

// occupied reports whether a placement overlaps an instance already made.
func (s *static) occupied(n, gpuIdx int, pl gpu.Placement) bool {
	for _, si := range s.insts[n] {
		if si.gpu == gpuIdx && si.place.Overlaps(pl) {
			return true
		}
	}
	return false
}

// largest is the most memory any instance of the layout has.
func (s *static) largest() uint64 {
	var b uint64
	for _, si := range s.byID {
		b = max(b, si.profile.Memory)
	}
	return b
}

func (s *static) plan(j *jobState, n int) (offer, bool, error) {
	for _, si := range s.insts[n] {
		if !si.busy && si.profile.Memory >= j.profile.Memory {
			return offer{node: n, reuse: true, memory: si.profile.Memory, pin: &partitioner.Pin{GPU: si.gpu, Start: si.place.Start}}, true, nil
		}
	}
	return offer{}, false, nil
}

func (s *static) commit(j *jobState, o offer) (grant, error) {
	for _, si := range s.insts[o.node] {
		if si.busy || si.gpu != o.pin.GPU || si.place.Start != o.pin.Start {
			continue
		}
		if _, err := s.nodes[o.node].part.Assign(si.uuid, j.job.ID); err != nil {
			return grant{}, fmt.Errorf("node %d: assign %s to job %s: %w", o.node, si.uuid, j.job.ID, err)
		}
		si.busy = true
		return grant{node: o.node, gpu: si.gpu, uuid: si.uuid, profile: si.profile, placement: si.place}, nil
	}
	return grant{}, fmt.Errorf("node %d: no idle instance at GPU %d slot %d for job %s", o.node, o.pin.GPU, o.pin.Start, j.job.ID)
}

// better is best fit: the least memory that holds the request, then the
// lower node.
func (s *static) better(a, b offer) bool {
	if a.memory != b.memory {
		return a.memory < b.memory
	}
	return a.node < b.node
}

func (s *static) release(g grant) error {
	si, ok := s.byID[g.uuid]
	if !ok {
		return fmt.Errorf("release %s: not an instance of the static layout", g.uuid)
	}
	if _, err := s.nodes[g.node].part.Release(g.uuid); err != nil {
		return fmt.Errorf("node %d: release %s: %w", g.node, g.uuid, err)
	}
	si.busy = false
	return nil
}
