package replay

import (
	"fmt"
	"testing"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner/geometry"
)

// slotMask is the memory slots of the placement at start of size slots.
func slotMask(start, size int) uint16 {
	return geometry.SlotMask(gpu.Placement{Start: start, Size: size})
}

// On an A100, a 3g.20gb beside another 3g.20gb holds every memory slot and
// leaves a compute slice no instance can use; beside free slots it strands
// nothing, unless only 3g.20gb requests wait: then the fourth free slice
// is lost as well.
func TestStrandedSlices(t *testing.T) {
	m := model(t)
	e := &engine{model: m}
	all, only3g := ^uint64(0), uint64(1)<<m.rank("3g.20gb")
	for _, c := range []struct {
		name   string
		held   uint16
		slices int
		want   uint64
		lost   int
	}{
		{"empty GPU", 0, 0, all, 0},
		{"3g.20gb in the top half", slotMask(4, 4), 3, all, 0},
		{"3g.20gb in the top half, only 3g.20gb waiting", slotMask(4, 4), 3, only3g, 1},
		{"two 3g.20gb", slotMask(0, 4) | slotMask(4, 4), 6, all, 1},
		{"4g.20gb and 1g.5gb in slot 4", slotMask(0, 4) | slotMask(4, 1), 5, all, 0},
		{"1g.10gb in slots 6-7 beside a 3g.20gb and a 2g.10gb", slotMask(6, 2) | slotMask(0, 4) | slotMask(4, 2), 6, all, 1},
		{"a full layout", slotMask(0, 2) | slotMask(2, 2) | slotMask(4, 4), 7, all, 0},
		{"empty GPU, nothing waiting", 0, 0, 0, 7},
	} {
		if got := e.stranded(m, c.held, c.slices, c.want); got != c.lost {
			t.Errorf("%s: %d slices stranded, want %d", c.name, got, c.lost)
		}
	}
}

// When a 4g.20gb ends beside a long 3g.20gb, arrival order gives its half
// of the GPU to the waiting 3g.20gb, which strands a slice, and the four
// 1g.5gb behind it wait for the long run. Packing first starts the four
// 1g.5gb there instead, and the 3g.20gb takes the other half when the long
// run ends. migpro+plan on one GPU neither plans nor reserves, so only
// packing first tells it from migpro here.
func TestPackFirstServesJobsThatStrandNothing(t *testing.T) {
	jobs := []Job{
		{ID: "long-3g", FullRuntime: 1000, Mem: Fixed(10 * GiB), Profile: "3g.20gb"},
		{ID: "short-4g", FullRuntime: 100, Mem: Fixed(10 * GiB), Profile: "4g.20gb"},
		{ID: "next-3g", Arrival: 1, FullRuntime: 1000, Mem: Fixed(10 * GiB), Profile: "3g.20gb"},
	}
	for i := range 4 {
		jobs = append(jobs, Job{ID: fmt.Sprintf("small-%d", i), Arrival: float64(2 + i), FullRuntime: 1000, Mem: Fixed(2 * GiB), Profile: "1g.5gb"})
	}
	cfg := oneGPU
	cfg.NoNVMLCost, cfg.Check = true, true
	started := func(r *Result) map[string]float64 {
		s := map[string]float64{}
		for _, run := range r.Runs {
			s[run.Job] = run.Started
		}
		return s
	}
	arrival := started(simRun(t, jobs, cfg, policy(t, "migpro")))
	if arrival["short-4g"] != 0 || arrival["next-3g"] != 100 || arrival["small-0"] < 1000 {
		t.Fatalf("arrival order (migpro) started %v; want the 4g at 0, the next 3g at 100 s and the 1g jobs after 1000 s (test premise)", arrival)
	}
	packed := simRun(t, jobs, cfg, policy(t, "migpro+plan"))
	got := started(packed)
	for i := range 4 {
		if id := fmt.Sprintf("small-%d", i); got[id] != 100 {
			t.Errorf("%s started at %.0f s, want 100 s, when the 4g.20gb ended", id, got[id])
		}
	}
	if got["next-3g"] != 1000 {
		t.Errorf("next-3g started at %.0f s, want 1000 s, when the long 3g.20gb ended", got["next-3g"])
	}
	if packed.Reservations != 0 || packed.Moves != 0 {
		t.Errorf("one GPU: %d reservations and %d planned moves, want none", packed.Reservations, packed.Moves)
	}
}

// One A100 at load 0.9 is where planning and reservations lost to
// first-fit (a whole-GPU reservation drains the only GPU). With packing
// first, and neither of them on one GPU, migpro+plan's mean JCT is shorter
// than first-fit's on both seeds of the benchmark: by 7.1% and 2.3%
// (measured). Before layouts counted only the profiles a node was asked
// for, migpro tied first-fit there and migpro+plan led it by at least 3%;
// now migpro alone leads by 3.0% and 4.0%, and on seed 2 migpro+plan's
// packing gives back part of that.
func TestPackFirstBeatsFirstFitOnOneSaturatedGPU(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		jobs, cfg := onlineCase(t, "a100-40gb", 1, 0.9, seed)
		ff := simRun(t, jobs, cfg, policy(t, "first-fit"))
		arrival := simRun(t, jobs, cfg, policy(t, "migpro"))
		packed := simRun(t, jobs, cfg, policy(t, "migpro+plan"))
		if r := ff.MeanJCT / packed.MeanJCT; r < 1.02 {
			t.Errorf("seed %d: first-fit's mean JCT %.0f s ÷ migpro+plan's %.0f s = %.3f, want ≥ 1.02", seed, ff.MeanJCT, packed.MeanJCT, r)
		} else {
			t.Logf("seed %d: first-fit ÷ migpro+plan %.3f, ÷ migpro %.3f", seed, r, ff.MeanJCT/arrival.MeanJCT)
		}
	}
}
