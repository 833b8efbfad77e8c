package geometry

import (
	"testing"

	"github.com/migpro/migpro/gpu"
)

// BenchmarkPrecompute measures building a GPU model's geometry and full
// reachability table (target: under 50 ms for 8-slot GPUs).
func BenchmarkPrecompute(b *testing.B) {
	models := map[string]func() []gpu.Profile{"a100-40gb": a100_40gb, "a30-24gb": a30_24gb}
	for name, profiles := range models {
		b.Run(name, func(b *testing.B) {
			p := profiles()
			for i := 0; i < b.N; i++ {
				if _, err := New(p, Config{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReachable(b *testing.B) {
	g := mustGeometry(b, a100_40gb(), nil)
	s, _ := g.Place(g.Empty(), "2g.10gb", 2)
	s, _ = g.Place(s, "1g.5gb", 6)
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		n += g.Reachable(s)
	}
	if n == 0 {
		b.Fatal("no layouts reachable")
	}
}
