package geometry

import "github.com/migpro/migpro/gpu"

// Profile tables as NVML reports them on real hardware (docs/design.md, "MIG
// facts"). The geometry must derive everything else from these.
func seq(n, size int, starts ...int) []gpu.Placement {
	var out []gpu.Placement
	if len(starts) == 0 {
		for i := 0; i < n; i++ {
			starts = append(starts, i*size)
		}
	}
	for _, s := range starts {
		out = append(out, gpu.Placement{Start: s, Size: size})
	}
	return out
}

func a100_40gb() []gpu.Profile {
	return []gpu.Profile{
		{ID: 0, Name: "1g.5gb", Slices: 1, MemoryMiB: 4864, MaxCount: 7, Placements: seq(7, 1)},
		{ID: 7, Name: "1g.5gb+me", Slices: 1, MemoryMiB: 4864, MaxCount: 1, Placements: seq(7, 1)},
		{ID: 9, Name: "1g.10gb", Slices: 1, MemoryMiB: 9856, MaxCount: 4, Placements: seq(4, 2)},
		{ID: 1, Name: "2g.10gb", Slices: 2, MemoryMiB: 9856, MaxCount: 3, Placements: seq(3, 2)},
		{ID: 2, Name: "3g.20gb", Slices: 3, MemoryMiB: 19968, MaxCount: 2, Placements: seq(0, 4, 0, 4)},
		{ID: 3, Name: "4g.20gb", Slices: 4, MemoryMiB: 19968, MaxCount: 1, Placements: seq(0, 4, 0)},
		{ID: 4, Name: "7g.40gb", Slices: 7, MemoryMiB: 40192, MaxCount: 1, Placements: seq(0, 8, 0)},
	}
}

func a30_24gb() []gpu.Profile {
	return []gpu.Profile{
		{ID: 0, Name: "1g.6gb", Slices: 1, MemoryMiB: 5836, MaxCount: 4, Placements: seq(4, 1)},
		{ID: 1, Name: "2g.12gb", Slices: 2, MemoryMiB: 11672, MaxCount: 2, Placements: seq(2, 2)},
		{ID: 3, Name: "4g.24gb", Slices: 4, MemoryMiB: 23344, MaxCount: 1, Placements: seq(0, 4, 0)},
	}
}

// plainSet is the A100-40GB's profiles without 1g.10gb and media variants.
var plainSet = []string{"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}
