package partitioner

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/partitioner/geometry"
)

// BenchmarkPrecompute builds each simulated model's geometry and its full
// reachability table from the profiles NVML reports (target: < 50 ms).
func BenchmarkPrecompute(b *testing.B) {
	for _, model := range simgpu.Models() {
		profiles, err := simgpu.ModelProfiles(model)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(model, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := geometry.New(profiles, geometry.Config{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecision times one allocation decision (no NVML work) on a busy
// 8-GPU node: every GPU half full of in-use and idle instances, so reuse,
// create and reclaim are all considered (target: < 50 µs), under each
// policy on the same node state (first-fit is the baseline to read against).
func BenchmarkDecision(b *testing.B) {
	for _, policy := range []Policy{FirstFit{}, Reachability{}, Migpro{}} {
		node := newSim(b, "a100-40gb:4,h100-80gb:4")
		p := newPart(b, node, WithPolicy(policy))
		r := rand.New(rand.NewSource(1))
		profiles := p.Profiles()
		for i := 0; i < 40; i++ {
			in, _, err := p.Allocate(context.Background(), profiles[r.Intn(len(profiles))], "busy")
			if err == nil && r.Intn(3) == 0 {
				p.Release(in.UUID)
			}
		}
		p.ObservePending(map[string]int{"3g.40gb": 2, "1g.10gb": 5})
		for _, prof := range []string{"1g.10gb", "3g.40gb", "7g.80gb"} {
			b.Run(policy.Name()+"/"+prof, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := p.Plan(prof); err != nil && !errors.Is(err, ErrMustWait) {
						b.Fatal(err)
					}
				}
			})
		}
		// The local API's "or larger" decision: the profile, else a
		// larger instance (its worst case is a profile that must wait).
		for _, prof := range []string{"1g.5gb", "4g.20gb", "7g.40gb"} {
			b.Run(policy.Name()+"/holding/"+prof, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := p.PlanHolding(prof); err != nil && !errors.Is(err, ErrMustWait) {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPolicyStreams replays the same random request streams under
// migpro, reachability and first-fit placement and reports how many requests each
// serves before the first one has to wait, and their ratio. The ratio is the
// number to read; ns/op is only the cost of the replay.
func BenchmarkPolicyStreams(b *testing.B) {
	for _, spec := range []string{"a100-40gb:1", "a100-40gb:2,h100-80gb:1", "a30-24gb:2"} {
		b.Run(spec, func(b *testing.B) {
			var mp, reach, ff float64
			const streams = 100
			for i := 0; i < b.N; i++ {
				mp, reach, ff = 0, 0, 0
				for seed := int64(1); seed <= streams; seed++ {
					mp += float64(servedBeforeWait(b, spec, Migpro{}, seed))
					reach += float64(servedBeforeWait(b, spec, Reachability{}, seed))
					ff += float64(servedBeforeWait(b, spec, FirstFit{}, seed))
				}
			}
			b.ReportMetric(mp/streams, "served-migpro")
			b.ReportMetric(reach/streams, "served-reach")
			b.ReportMetric(ff/streams, "served-firstfit")
			b.ReportMetric(mp/ff, "ratio-migpro")
			b.ReportMetric(reach/ff, "ratio-reach")
		})
	}
}

// servedBeforeWait replays one stream: allocations of random profiles
// (smaller ones likelier) with releases of random earlier ones in between.
func servedBeforeWait(b *testing.B, spec string, policy Policy, seed int64) int {
	node, err := simgpu.NewNode(spec, simgpu.WithRoot(b.TempDir()), simgpu.WithSeed(seed))
	if err != nil {
		b.Fatal(err)
	}
	defer node.Close()
	p, err := New(node, WithPolicy(policy), WithLogger(quietlog.New()))
	if err != nil {
		b.Fatal(err)
	}
	var plain []string
	for _, pr := range p.Profiles() {
		if !containsPlus(pr) {
			plain = append(plain, pr)
		}
	}
	r := rand.New(rand.NewSource(seed))
	var held []string
	served := 0
	for step := 0; step < 10000; step++ {
		if len(held) > 0 && r.Float64() < 0.3 {
			i := r.Intn(len(held))
			p.Release(held[i])
			held = append(held[:i], held[i+1:]...)
			continue
		}
		prof := plain[min(r.Intn(len(plain)), r.Intn(len(plain)))]
		in, _, err := p.Allocate(context.Background(), prof, fmt.Sprint(step))
		if errors.Is(err, ErrMustWait) {
			return served
		}
		if err != nil {
			b.Fatal(err)
		}
		served++
		held = append(held, in.UUID)
	}
	return served
}

func containsPlus(s string) bool {
	for _, c := range s {
		if c == '+' {
			return true
		}
	}
	return false
}
