package replay

import (
	"reflect"
	"testing"
)

func model(t testing.TB) *Model {
	t.Helper()
	m, err := LoadModel("a100-40gb")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mix(t testing.TB, name string, n int, seed uint64) []Job {
	t.Helper()
	jobs, err := Generate(MixSpec{Name: name, Jobs: n, Seed: seed, GPUs: 8}, model(t))
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func policy(t testing.TB, name string) Policy {
	t.Helper()
	ps, err := ParsePolicies(name)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

func simRun(t testing.TB, jobs []Job, cfg Config, pol Policy) *Result {
	t.Helper()
	r, err := Run(jobs, cfg, pol)
	if err != nil {
		t.Fatalf("%s: %v", pol.Name, err)
	}
	return r
}

// same compares two results field by field, leaving out the wall time.
func same(a, b *Result) bool {
	x, y := *a, *b
	x.Wall, y.Wall = 0, 0
	return reflect.DeepEqual(x, y)
}

// oneGPU is a single A100 with no NVML time, for hand-computed cases.
var oneGPU = Config{Nodes: 1, GPUsPerNode: 1, NoNVMLCost: true, Check: true}
