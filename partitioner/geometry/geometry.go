package geometry

import (
	"fmt"
	"sort"
	"strings"

	"github.com/migpro/migpro/gpu"
)

// Shape is a set of profiles that occupy the GPU identically: the same compute
// slices and the same legal placements. "1g.5gb" and "1g.5gb+me" share a
// shape; "1g.10gb" (two memory slots) does not.
type Shape struct {
	Index      int
	Slices     int
	MaxCount   int
	Placements []gpu.Placement
	// Profiles are the profile names with this shape, the base name first.
	Profiles []string
	// Counted says whether the shape takes part in the maximal layouts that
	// reachability counts.
	Counted bool
	// masks are the placements as memory-slot masks, in Placements' order.
	masks []uint16
}

// Name is the shape's base profile name.
func (s *Shape) Name() string { return s.Profiles[0] }

// Option is one shape at one legal placement: the unit states are made of.
type Option struct {
	Index     int
	Shape     int
	Placement gpu.Placement
	slotMask  uint16
}

// Geometry is one GPU model's MIG geometry plus its reachability table.
type Geometry struct {
	Slots       int // memory slots, e.g. 8 on A100/H100, 4 on A30
	Slices      int // compute slices, e.g. 7 on A100/H100, 4 on A30
	Shapes      []*Shape
	Options     []Option
	byProfile   map[string]int // profile name -> shape index
	optionIndex map[optionKey]int
	reach       *reachCache
	memo        usableMemo
}

type optionKey struct {
	shape int
	start int
}

// Config selects what reachability counts.
type Config struct {
	// Counted lists the profile names whose layouts reachability counts. Empty
	// means every profile. Variants such as "+me" count as their base shape.
	Counted []string
}

// New builds the geometry of one GPU model from its NVML profiles and
// precomputes its reachability table.
func New(profiles []gpu.Profile, cfg Config) (*Geometry, error) {
	if len(profiles) == 0 {
		return nil, fmt.Errorf("build MIG geometry: no profiles")
	}
	g := &Geometry{byProfile: map[string]int{}, optionIndex: map[optionKey]int{}}
	sorted := append([]gpu.Profile(nil), profiles...)
	// Base names (no "+attr") first, so a shape is named after its plain profile.
	sort.SliceStable(sorted, func(i, j int) bool {
		bi, bj := !strings.Contains(sorted[i].Name, "+"), !strings.Contains(sorted[j].Name, "+")
		if bi != bj {
			return bi
		}
		if sorted[i].Slices != sorted[j].Slices {
			return sorted[i].Slices < sorted[j].Slices
		}
		return sorted[i].MemoryMiB < sorted[j].MemoryMiB
	})
	for _, p := range sorted {
		if err := g.addProfile(p); err != nil {
			return nil, err
		}
	}
	if g.Slots > 16 {
		return nil, fmt.Errorf("build MIG geometry: %d memory slots is more than the model supports (16)", g.Slots)
	}
	if err := g.markCounted(cfg.Counted); err != nil {
		return nil, err
	}
	g.buildOptions()
	if len(g.Options) > maxOptions || len(g.Shapes) > maxShapes {
		return nil, fmt.Errorf("build MIG geometry: %d placements in %d shapes exceed the model's limits (%d, %d)", len(g.Options), len(g.Shapes), maxOptions, maxShapes)
	}
	g.reach = newReachCache(g)
	return g, nil
}

func (g *Geometry) addProfile(p gpu.Profile) error {
	if p.Name == "" || p.Slices <= 0 || len(p.Placements) == 0 {
		return fmt.Errorf("build MIG geometry: profile %q has no name, slices or placements", p.Name)
	}
	if _, dup := g.byProfile[p.Name]; dup {
		return fmt.Errorf("build MIG geometry: profile %q listed twice", p.Name)
	}
	for _, pl := range p.Placements {
		if pl.Start < 0 || pl.Size <= 0 {
			return fmt.Errorf("build MIG geometry: profile %s has bad placement %s", p.Name, pl)
		}
		if pl.End() > g.Slots {
			g.Slots = pl.End()
		}
	}
	if p.Slices > g.Slices {
		g.Slices = p.Slices
	}
	for _, s := range g.Shapes {
		if s.Slices == p.Slices && samePlacements(s.Placements, p.Placements) {
			s.Profiles = append(s.Profiles, p.Name)
			if p.MaxCount > s.MaxCount {
				s.MaxCount = p.MaxCount
			}
			g.byProfile[p.Name] = s.Index
			return nil
		}
	}
	pls := append([]gpu.Placement(nil), p.Placements...)
	sort.Slice(pls, func(i, j int) bool { return pls[i].Start < pls[j].Start })
	s := &Shape{Index: len(g.Shapes), Slices: p.Slices, MaxCount: p.MaxCount, Placements: pls, Profiles: []string{p.Name}}
	if s.MaxCount <= 0 {
		s.MaxCount = len(pls)
	}
	for _, pl := range pls {
		s.masks = append(s.masks, slotMask(pl))
	}
	g.Shapes = append(g.Shapes, s)
	g.byProfile[p.Name] = s.Index
	return nil
}

func (g *Geometry) markCounted(names []string) error {
	if len(names) == 0 {
		for _, s := range g.Shapes {
			s.Counted = true
		}
		return nil
	}
	for _, n := range names {
		i, ok := g.byProfile[n]
		if !ok {
			return fmt.Errorf("counted profile %q is not offered by this GPU (offered: %s)", n, strings.Join(g.ProfileNames(), ", "))
		}
		g.Shapes[i].Counted = true
	}
	return nil
}

func (g *Geometry) buildOptions() {
	for _, s := range g.Shapes {
		for _, pl := range s.Placements {
			o := Option{Index: len(g.Options), Shape: s.Index, Placement: pl, slotMask: slotMask(pl)}
			g.optionIndex[optionKey{s.Index, pl.Start}] = o.Index
			g.Options = append(g.Options, o)
		}
	}
}

func samePlacements(a, b []gpu.Placement) bool {
	if len(a) != len(b) {
		return false
	}
	set := map[gpu.Placement]bool{}
	for _, p := range a {
		set[p] = true
	}
	for _, p := range b {
		if !set[p] {
			return false
		}
	}
	return true
}

func slotMask(p gpu.Placement) uint16 {
	return uint16((1<<p.Size)-1) << p.Start
}

// ShapeOf returns the shape of a profile name.
func (g *Geometry) ShapeOf(profile string) (*Shape, bool) {
	i, ok := g.byProfile[profile]
	if !ok {
		return nil, false
	}
	return g.Shapes[i], true
}

// OptionAt returns the option for a profile at a placement start.
func (g *Geometry) OptionAt(profile string, start int) (Option, bool) {
	s, ok := g.ShapeOf(profile)
	if !ok {
		return Option{}, false
	}
	i, ok := g.optionIndex[optionKey{s.Index, start}]
	if !ok {
		return Option{}, false
	}
	return g.Options[i], true
}

// ProfileNames lists every profile the geometry knows, in shape order.
func (g *Geometry) ProfileNames() []string {
	var out []string
	for _, s := range g.Shapes {
		out = append(out, s.Profiles...)
	}
	return out
}

// MaximalLayouts is how many fully configured layouts the counted shapes form.
func (g *Geometry) MaximalLayouts() int { return len(g.reach.unblocked.maximal) }
