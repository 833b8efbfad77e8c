package replay

import "testing"

// BenchmarkStream simulates the 5,000-job Poisson stream on 20 nodes × 8
// A100s under each policy (the target is under 60 s for all of them
// together on one core: go test -bench Stream -cpu 1 ./simulate/).
func BenchmarkStream(b *testing.B) {
	m := model(b)
	jobs, err := Generate(MixSpec{Name: "stream", Seed: 1, GPUs: 160}, m)
	if err != nil {
		b.Fatal(err)
	}
	for _, pol := range Policies() {
		b.Run(pol.Name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r := simRun(b, jobs, Config{Nodes: 20, GPUsPerNode: 8, Seed: 1}, pol)
				b.ReportMetric(r.Makespan, "makespan-s")
			}
		})
	}
}

// BenchmarkMixedNode is one policy on a busy single node, for
// profiling the engine's own overhead against the partitioner's.
func BenchmarkMixedNode(b *testing.B) {
	jobs := mix(b, "mixed", 240, 1)
	for i := 0; i < b.N; i++ {
		simRun(b, jobs, Config{Seed: 1}, policy(b, "migpro"))
	}
}
