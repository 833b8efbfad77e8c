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

func policy(t testing.TB, name string) Strategy {
	t.Helper()
	ps, err := ParsePolicies(name)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

func simRun(t testing.TB, jobs []Job, cfg Config, pol Strategy) *Result {
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

// chatsBehindBlockers is one A100 where two blockers (a 4g.20gb and a
// 2g.10gb, 1,000 s each) leave room for one small instance, and three runs
// of the workload "chat", which declares 3 GiB (a 1g.5gb) but grows to
// 8 GiB: chat-1 at 0 s, chat-2 queued behind it at 1 s, chat-3 at 60 s.
func chatsBehindBlockers() []Job {
	chat := func(id string, arrival float64) Job {
		return Job{ID: id, Key: "chat", Arrival: arrival, FullRuntime: 100, Scaling: 0,
			Mem: Memory{Start: 3 * GiB, Peak: 8 * GiB, GrowTo: 1}, Declared: 3 * GiB}
	}
	return []Job{
		{ID: "b4", Key: "b4", FullRuntime: 1000, Scaling: 1, Mem: Fixed(10 * GiB), Profile: "4g.20gb"},
		{ID: "b2", Key: "b2", FullRuntime: 1000, Scaling: 1, Mem: Fixed(5 * GiB), Profile: "2g.10gb"},
		chat("chat-1", 0), chat("chat-2", 1), chat("chat-3", 60),
	}
}

// firstRuns is, per job, its first run: r.Runs is in the order runs ended,
// and a job's runs follow one another.
func firstRuns(r *Result) map[string]RunRecord {
	first := map[string]RunRecord{}
	for i := len(r.Runs) - 1; i >= 0; i-- {
		first[r.Runs[i].Job] = r.Runs[i]
	}
	return first
}

// firstProfiles is, per job, the profile of its first run.
func firstProfiles(r *Result) map[string]string {
	first := map[string]string{}
	for job, x := range firstRuns(r) {
		first[job] = x.Profile
	}
	return first
}
