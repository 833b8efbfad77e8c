package simgpu

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/sirupsen/logrus"
)

// No real table lets non-overlapping placements exceed the compute-slice
// budget, so the budget check is proved on a doctored model whose 1g
// placements cover all 8 memory slots with a count of 8.
func TestComputeSliceBudgetRefusal(t *testing.T) {
	base, err := lookupModel("a100-40gb")
	if err != nil {
		t.Fatal(err)
	}
	m := *base
	m.placements = map[int][]nvml.GpuInstancePlacement{
		nvml.GPU_INSTANCE_PROFILE_1_SLICE: seq([]uint32{0, 1, 2, 3, 4, 5, 6, 7}, 1),
	}
	info := m.cfg.MIGProfiles.GpuInstanceProfiles[nvml.GPU_INSTANCE_PROFILE_1_SLICE]
	info.InstanceCount = 8
	m.cfg.MIGProfiles.GpuInstanceProfiles = map[int]nvml.GpuInstanceProfileInfo{nvml.GPU_INSTANCE_PROFILE_1_SLICE: info}

	g := &gpuState{d: &driver{log: logrus.StandardLogger()}, model: &m, migOn: true, gis: map[int]*giState{}}
	for slot := uint32(0); slot < 7; slot++ {
		if _, ret := g.createGILocked(&info, &nvml.GpuInstancePlacement{Start: slot, Size: 1}); ret != nvml.SUCCESS {
			t.Fatalf("1g at slot %d: %v", slot, ret)
		}
	}
	_, ret := g.createGILocked(&info, &nvml.GpuInstancePlacement{Start: 7, Size: 1})
	if ret != nvml.ERROR_INSUFFICIENT_RESOURCES {
		t.Fatalf("eighth 1g = %d, want ERROR_INSUFFICIENT_RESOURCES", ret)
	}
	if len(g.gis) != 7 {
		t.Fatalf("refused create left %d GIs, want 7", len(g.gis))
	}
}
