package simgpu

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/nvmlgpu"
)

// MaxGPUsPerSpec bounds a simulated node so a typo ("a100-40gb:800") fails
// clearly instead of allocating hundreds of device nodes.
const MaxGPUsPerSpec = 64

// model is one simulated GPU model: go-nvml's mock profile table plus the
// corrections the mock needs to behave like the hardware.
type model struct {
	name string
	cfg  gpus.Config
	// memSlots and computeSlices are the GPU's MIG geometry: 8 and 7 on
	// A100/H100/H200, 4 and 4 on A30.
	memSlots      int
	computeSlices int
	// placements replaces the mock's placement list for a profile id. The
	// mock's H100/H200 tables size 3g as 3, 7g as 7 and 1g double-memory as 1,
	// which the driver never reports.
	placements map[int][]nvml.GpuInstancePlacement
	// memoryMiB replaces the mock's profile memory where the mock's figure
	// would make go-nvlib derive the wrong name (H200's 1g would read
	// "1g.35gb" and 3g "3g.88gb").
	memoryMiB map[int]uint64
}

func seq(starts []uint32, size uint32) []nvml.GpuInstancePlacement {
	out := make([]nvml.GpuInstancePlacement, len(starts))
	for i, s := range starts {
		out[i] = nvml.GpuInstancePlacement{Start: s, Size: size}
	}
	return out
}

// hopperPlacements are the driver's placements on 8-slot Hopper parts,
// overriding the defective mock entries.
var hopperPlacements = map[int][]nvml.GpuInstancePlacement{
	nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2: seq([]uint32{0, 2, 4, 6}, 2),
	nvml.GPU_INSTANCE_PROFILE_3_SLICE:      seq([]uint32{0, 4}, 4),
	nvml.GPU_INSTANCE_PROFILE_7_SLICE:      seq([]uint32{0}, 8),
}

var models = []model{
	{name: "a30-24gb", cfg: gpus.A30_PCIE_24GB, memSlots: 4, computeSlices: 4},
	{name: "a100-40gb", cfg: gpus.A100_SXM4_40GB, memSlots: 8, computeSlices: 7},
	{name: "a100-80gb", cfg: gpus.A100_SXM4_80GB, memSlots: 8, computeSlices: 7},
	{name: "h100-80gb", cfg: gpus.H100_SXM5_80GB, memSlots: 8, computeSlices: 7, placements: hopperPlacements},
	{name: "h200-141gb", cfg: gpus.H200_SXM5_141GB, memSlots: 8, computeSlices: 7, placements: hopperPlacements,
		memoryMiB: map[int]uint64{
			nvml.GPU_INSTANCE_PROFILE_1_SLICE:      17920,
			nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1: 17920,
			nvml.GPU_INSTANCE_PROFILE_3_SLICE:      71680,
			nvml.GPU_INSTANCE_PROFILE_4_SLICE:      71680,
		}},
}

func lookupModel(name string) (*model, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	for i := range models {
		if models[i].name == key {
			return &models[i], nil
		}
	}
	return nil, fmt.Errorf("unknown GPU model %q (known: %s)", name, strings.Join(Models(), ", "))
}

// Models lists the simulated GPU models, in the lower-case spelling that
// --simulate and migctl accept.
func Models() []string {
	out := make([]string, len(models))
	for i, m := range models {
		out[i] = m.name
	}
	return out
}

// ModelCount is one MODEL[:COUNT] term of a node spec.
type ModelCount struct {
	Model string
	Count int
}

// ParseSpec parses a node spec such as "a100-40gb:2,h100-80gb". A missing
// count means one GPU. GPUs are numbered in spec order.
func ParseSpec(s string) ([]ModelCount, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty GPU spec: want MODEL[:COUNT][,MODEL[:COUNT]...] with MODEL one of %s", strings.Join(Models(), ", "))
	}
	var out []ModelCount
	total := 0
	for _, term := range strings.Split(s, ",") {
		name, countStr, hasCount := strings.Cut(strings.TrimSpace(term), ":")
		if name == "" {
			return nil, fmt.Errorf("GPU spec %q: empty model in term %q", s, term)
		}
		m, err := lookupModel(name)
		if err != nil {
			return nil, fmt.Errorf("GPU spec %q: %w", s, err)
		}
		count := 1
		if hasCount {
			count, err = strconv.Atoi(strings.TrimSpace(countStr))
			if err != nil || count < 1 {
				return nil, fmt.Errorf("GPU spec %q: bad count %q for %s: want a whole number of at least 1", s, countStr, m.name)
			}
		}
		total += count
		if total > MaxGPUsPerSpec {
			return nil, fmt.Errorf("GPU spec %q: %d GPUs is more than the limit of %d", s, total, MaxGPUsPerSpec)
		}
		out = append(out, ModelCount{Model: m.name, Count: count})
	}
	return out, nil
}

// deviceMemBytes is the device framebuffer the simulated NVML reports.
func (m *model) deviceMemBytes() uint64 { return m.cfg.MemoryMB * 1024 * 1024 }

// profileIDs lists the model's GPU-instance profile ids in ascending order.
func (m *model) profileIDs() []int {
	ids := make([]int, 0, len(m.cfg.MIGProfiles.GpuInstanceProfiles))
	for id := range m.cfg.MIGProfiles.GpuInstanceProfiles {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// profileInfo is the corrected NVML profile info for a profile id.
func (m *model) profileInfo(id int) (nvml.GpuInstanceProfileInfo, bool) {
	info, ok := m.cfg.MIGProfiles.GpuInstanceProfiles[id]
	if !ok {
		return info, false
	}
	if mem, ok := m.memoryMiB[id]; ok {
		info.MemorySizeMB = mem
	}
	return info, true
}

// placementsFor is the corrected legal placement list for a profile id.
func (m *model) placementsFor(id int) []nvml.GpuInstancePlacement {
	src, ok := m.placements[id]
	if !ok {
		src = m.cfg.MIGProfiles.GpuInstancePlacements[id]
	}
	return append([]nvml.GpuInstancePlacement(nil), src...)
}

// ModelProfiles is the corrected profile table of a simulated model, sorted
// by compute slices, then memory, then profile id. It is what the adapter
// reports for that model, without building a node.
func ModelProfiles(name string) ([]gpu.Profile, error) {
	m, err := lookupModel(name)
	if err != nil {
		return nil, err
	}
	var out []gpu.Profile
	for _, id := range m.profileIDs() {
		info, _ := m.profileInfo(id)
		pname, err := nvmlgpu.ProfileName(id, int(info.SliceCount), info.MemorySizeMB, m.deviceMemBytes())
		if err != nil {
			return nil, fmt.Errorf("profiles of %s: %w", m.name, err)
		}
		p := gpu.Profile{
			ID:        id,
			Name:      pname,
			Slices:    int(info.SliceCount),
			MemoryMiB: info.MemorySizeMB,
			MaxCount:  int(info.InstanceCount),
		}
		for _, pl := range m.placementsFor(id) {
			p.Placements = append(p.Placements, gpu.Placement{Start: int(pl.Start), Size: int(pl.Size)})
		}
		out = append(out, p)
	}
	gpu.SortProfiles(out)
	return out, nil
}
