package dra

import (
	"testing"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
)

// A GPU whose profiles order differently by memory and by slices: a
// two-slice profile with little memory and a one-slice profile with much.
func rankGPU() gpuInfo {
	pl := func(starts ...int) []gpu.Placement {
		var out []gpu.Placement
		for _, s := range starts {
			out = append(out, gpu.Placement{Start: s, Size: 2})
		}
		return out
	}
	return gpuInfo{index: 0, model: "test", uuid: "GPU-0", slots: 8, slices: 7, profiles: []gpu.Profile{
		{ID: 1, Name: "1g.10gb", Slices: 1, MemoryMiB: 9856, MaxCount: 4, Placements: pl(0, 2, 4, 6)},
		{ID: 2, Name: "2g.5gb", Slices: 2, MemoryMiB: 4864, MaxCount: 3, Placements: pl(0, 2, 4)},
		{ID: 3, Name: "1g.5gb+me", Slices: 1, MemoryMiB: 4864, MaxCount: 1, Placements: pl(0, 2, 4, 6)},
		{ID: 4, Name: "1g.5gb", Slices: 1, MemoryMiB: 4864, MaxCount: 4, Placements: pl(0, 2, 4, 6)},
	}}
}

// Memory first, then slices, then the name: a claim by capacity ("at least
// 4Gi") takes the first fit, which must be the profile with the least
// memory, and among equal memory the fewest slices.
func TestProfileRanksMemoryThenSlices(t *testing.T) {
	got := profileRanks([]gpuInfo{rankGPU()})
	want := map[string]int{"1g.5gb": 0, "1g.5gb+me": 1, "2g.5gb": 2, "1g.10gb": 3}
	for name, r := range want {
		if got[name] != r {
			t.Errorf("rank of %s is %d, want %d (all: %v)", name, got[name], r, got)
		}
	}
}

// The published order follows the ranks: every 2g.5gb device (less
// memory) comes before every 1g.10gb device (fewer slices).
func TestOrderedByMemoryBeforeSlices(t *testing.T) {
	st := state{gpus: []gpuInfo{rankGPU()},
		plan: func(string, partitioner.Pin) (partitioner.Plan, error) {
			return partitioner.Plan{Steps: []partitioner.Step{{Kind: partitioner.StepCreate}}}, nil
		}}
	devs := ordered(st, nil)
	last2g, first1g10 := -1, len(devs)
	for i, d := range devs {
		switch *d.Attributes["profile"].StringValue {
		case "2g.5gb":
			last2g = i
		case "1g.10gb":
			first1g10 = min(first1g10, i)
		}
	}
	if last2g < 0 || last2g > first1g10 {
		t.Errorf("2g.5gb (4864 MiB) last at %d, 1g.10gb (9856 MiB) first at %d: memory must order first", last2g, first1g10)
	}
}
