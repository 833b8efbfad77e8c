package replay

import (
	"math"
	"sort"
	"strings"
	"testing"
)

func TestSameSeedSameResult(t *testing.T) {
	for _, name := range []string{"llm", "pcie"} {
		jobs := mix(t, name, 60, 7)
		again := mix(t, name, 60, 7)
		other := mix(t, name, 60, 8)
		for _, pol := range Policies() {
			a := simRun(t, jobs, Config{Seed: 3}, pol)
			b := simRun(t, again, Config{Seed: 3}, pol)
			if !same(a, b) {
				t.Errorf("%s %s: two runs from the same seed differ:\n%+v\n%+v", name, pol.Name, a, b)
			}
			if c := simRun(t, other, Config{Seed: 3}, pol); same(a, c) {
				t.Errorf("%s %s: a different workload seed gave the same result", name, pol.Name)
			}
		}
	}
}

// TestConservation checks, on every mix and policy, from the run log alone:
// each job finishes exactly once and last, its runs never overlap, the lost
// work and restarts add up, and no GPU is over-committed at any time (the
// engine's own Check also verifies the partitioner's records after every
// simulated instant).
func TestConservation(t *testing.T) {
	m := model(t)
	for _, name := range []string{"small", "mixed", "llm", "pcie"} {
		jobs := mix(t, name, 90, 2)
		for _, pol := range Policies() {
			res := simRun(t, jobs, Config{Check: true, Seed: 2}, pol)
			checkConservation(t, name+"/"+pol.Name, m, jobs, res)
		}
	}
}

func checkConservation(t *testing.T, what string, m *Model, jobs []Job, res *Result) {
	t.Helper()
	byJob := map[string][]RunRecord{}
	lost, restarts := 0.0, 0
	for _, r := range res.Runs {
		byJob[r.Job] = append(byJob[r.Job], r)
		if r.Outcome != Finished {
			lost += r.Ended - r.Started
			restarts++
		}
	}
	for i, j := range jobs {
		runs := byJob[j.ID]
		finished := 0
		for k, r := range runs {
			if r.Outcome == Finished {
				finished++
				if k != len(runs)-1 {
					t.Errorf("%s: job %s finished before its last run", what, j.ID)
				}
				if r.Ended != res.Completions[i] {
					t.Errorf("%s: job %s completes at %v but its run ended at %v", what, j.ID, res.Completions[i], r.Ended)
				}
			}
			if r.Granted < j.Arrival || r.Started < r.Granted || r.Ended <= r.Started {
				t.Errorf("%s: job %s run %d times out of order: arrival %v granted %v started %v ended %v", what, j.ID, k, j.Arrival, r.Granted, r.Started, r.Ended)
			}
			if k > 0 && r.Granted < runs[k-1].Ended {
				t.Errorf("%s: job %s runs overlap", what, j.ID)
			}
		}
		if finished != 1 {
			t.Errorf("%s: job %s finished %d times", what, j.ID, finished)
		}
	}
	if len(byJob) != len(jobs) {
		t.Errorf("%s: %d jobs ran, want %d", what, len(byJob), len(jobs))
	}
	if math.Abs(lost-res.LostWork) > 1e-6*max(1, lost) || restarts != res.Restarts {
		t.Errorf("%s: lost %v in %d restarts by the log, result says %v in %d", what, lost, restarts, res.LostWork, res.Restarts)
	}
	checkNoOvercommit(t, what, m, res.Runs)
}

// checkNoOvercommit sweeps each GPU's holdings over time: at every instant
// the held placements are disjoint and use at most the GPU's slices.
func checkNoOvercommit(t *testing.T, what string, m *Model, runs []RunRecord) {
	t.Helper()
	type edge struct {
		t     float64
		open  bool
		r     RunRecord
		order int
	}
	byGPU := map[int][]edge{}
	for i, r := range runs {
		byGPU[r.GPU] = append(byGPU[r.GPU], edge{r.Granted, true, r, i}, edge{r.Ended, false, r, i})
	}
	for g, edges := range byGPU {
		// Releases at an instant happen before grants at the same instant.
		sort.Slice(edges, func(a, b int) bool {
			if edges[a].t != edges[b].t {
				return edges[a].t < edges[b].t
			}
			return !edges[a].open && edges[b].open
		})
		held := map[int]RunRecord{}
		for _, e := range edges {
			if !e.open {
				delete(held, e.order)
				continue
			}
			slices := 0
			for _, h := range held {
				if h.Start < e.r.Start+e.r.Slots && e.r.Start < h.Start+h.Slots {
					t.Fatalf("%s: GPU %d at t=%v: %s of %s at slot %d overlaps %s of %s at slot %d", what, g, e.t,
						e.r.Profile, e.r.Job, e.r.Start, h.Profile, h.Job, h.Start)
				}
				p, _ := m.Profile(h.Profile)
				slices += p.Slices
			}
			p, _ := m.Profile(e.r.Profile)
			if slices+p.Slices > m.Slices {
				t.Fatalf("%s: GPU %d at t=%v: %d slices in use", what, g, e.t, slices+p.Slices)
			}
			held[e.order] = e.r
		}
	}
}

func TestLowerBoundNeverAboveMakespan(t *testing.T) {
	for _, name := range []string{"small", "mixed", "llm", "pcie"} {
		for seed := uint64(1); seed <= 3; seed++ {
			jobs := mix(t, name, 60, seed)
			for _, pol := range Policies() {
				r := simRun(t, jobs, Config{NoNVMLCost: true, Seed: int64(seed)}, pol)
				if r.LowerBound <= 0 || r.LowerBound > r.Makespan+1e-9 {
					t.Errorf("%s seed %d %s: lower bound %v, makespan %v", name, seed, pol.Name, r.LowerBound, r.Makespan)
				}
			}
		}
	}
	// Mixed nodes, where jobs only the H100 holds get a bound of their own.
	for _, node := range []string{"a100-40gb:2,h100-80gb:1", "a100-40gb:1,h100-80gb:1"} {
		m, err := LoadModel(node)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"online", "mixed", "llm"} {
			jobs, err := Generate(MixSpec{Name: name, Jobs: 80, Seed: 4, GPUs: m.GPUsPerNode()}, m)
			if err != nil {
				t.Fatal(err)
			}
			for _, pol := range []string{"first-fit", "reachability", "migpro", "migpro+predict"} {
				r := simRun(t, jobs, Config{Model: node, Nodes: 1, GPUsPerNode: m.GPUsPerNode(), NoNVMLCost: true, Seed: 4}, policy(t, pol))
				if r.LowerBound <= 0 || r.LowerBound > r.Makespan+1e-9 {
					t.Errorf("%s on %s, %s: lower bound %v, makespan %v", name, node, pol, r.LowerBound, r.Makespan)
				}
			}
		}
	}
}

func TestLowerBoundByHand(t *testing.T) {
	m := model(t)
	// Seven memory-bound 1g jobs of 100 s: 700 slice-seconds over 7 slices
	// is 100 s; one of them arriving at 50 s cannot finish before 150 s.
	var jobs []Job
	for i := 0; i < 7; i++ {
		jobs = append(jobs, Job{ID: string(rune('a' + i)), FullRuntime: 100, Mem: Fixed(2 * GiB)})
	}
	if got := LowerBound(jobs, m, 1); math.Abs(got-100) > 1e-9 {
		t.Errorf("bound %v, want 100", got)
	}
	jobs[6].Arrival = 50
	if got := LowerBound(jobs, m, 1); math.Abs(got-150) > 1e-9 {
		t.Errorf("bound with a late arrival %v, want 150", got)
	}
	// Memory slots bound it too: a 1g.10gb uses one of the 7 compute slices
	// but two of the 8 memory slots, so eight 8 GiB jobs of 100 s need 1,600
	// slot-seconds (200 s), not 800 slice-seconds (114 s). Four at a time is
	// what the GPU holds, so 200 s is also what every policy reaches.
	var mem []Job
	for i := 0; i < 8; i++ {
		mem = append(mem, Job{ID: string(rune('a' + i)), FullRuntime: 100, Mem: Fixed(8 * GiB)})
	}
	if got := LowerBound(mem, m, 1); math.Abs(got-200) > 1e-9 {
		t.Errorf("bound of eight 1g.10gb jobs %v, want 200 (memory slots)", got)
	}
	cfg := oneGPU
	for _, pol := range []string{"first-fit", "migpro"} {
		if r := simRun(t, mem, cfg, policy(t, pol)); math.Abs(r.Makespan-200) > 1e-9 || math.Abs(r.Ratio-1) > 1e-9 {
			t.Errorf("%s: makespan %v (÷ bound %v), want 200 (1.00)", pol, r.Makespan, r.Ratio)
		}
	}
	// On a node of one A100-40GB and one H100-80GB, two compute-bound 60 GiB
	// jobs of 100 s fit only the H100's whole GPU: 200 s, though the node's
	// 14 slices would do their 1,400 slice-seconds in 100.
	mixed, err := LoadModel("a100-40gb:1,h100-80gb:1")
	if err != nil {
		t.Fatal(err)
	}
	h100 := []Job{
		{ID: "x", FullRuntime: 100, Scaling: 1, Mem: Fixed(60 * GiB)},
		{ID: "y", FullRuntime: 100, Scaling: 1, Mem: Fixed(60 * GiB)},
	}
	if got := LowerBound(h100, mixed, 2); math.Abs(got-200) > 1e-9 {
		t.Errorf("bound of two H100-only jobs %v, want 200", got)
	}
	// One profile for both resources: eight half compute-bound 8 GiB jobs
	// of 100 s on one A100 are cheapest in slices on a 1g.10gb (264.6 s ×
	// 1 slice) and in slots on a 2g.10gb (187.1 s × 2 slots), and the
	// separate bounds (302.4 s over 7 slices, 374.2 s over 8 slots) let
	// each job take both. Each must run on one: the best mix of the two
	// profiles over both resources at once needs 403.7 s, which the
	// weighted bound reaches to within its grid of weights.
	var half []Job
	for i := 0; i < 8; i++ {
		half = append(half, Job{ID: string(rune('a' + i)), FullRuntime: 100, Scaling: 0.5, Mem: Fixed(8 * GiB)})
	}
	t1, t2 := half[0].Runtime(1, 7), half[0].Runtime(2, 7)
	separate := max(8*t1/7, 8*2*t2/8)
	// The weighted use of a 1g.10gb falls with λ and a 2g.10gb's rises;
	// the best λ is where they cross.
	f1 := func(l float64) float64 { return t1 * (l/7 + (1-l)*2/8) }
	f2 := func(l float64) float64 { return t2 * (l*2/7 + (1-l)*2/8) }
	lam := (f1(0) - f2(0)) / ((f1(0) - f1(1)) + (f2(1) - f2(0)))
	joint := 8 * f1(lam)
	got := LowerBound(half, m, 1)
	if got > joint+1e-9 || got < joint-1.5 || got < separate+25 {
		t.Errorf("bound of eight 8 GiB half compute-bound jobs %.1f, want at most %.1f (one profile per job over both resources) and within 1.5 of it, above the separate bounds' %.1f", got, joint, separate)
	}
	// A compute-bound job needing 30 GiB only fits the whole GPU: 7 × 100.
	big := []Job{{ID: "big", FullRuntime: 100, Scaling: 1, Mem: Fixed(30 * GiB)}}
	if got := LowerBound(big, m, 2); math.Abs(got-100) > 1e-9 {
		t.Errorf("bound of one whole-GPU job %v, want its run time 100", got)
	}
}

// On one GPU with a homogeneous mix, the sequential baseline runs the jobs
// one after another on the whole GPU: its makespan is the sum of full-GPU
// run times, plus the one create of the whole-GPU instance.
func TestSequentialIsSumOfRunTimes(t *testing.T) {
	m := model(t)
	jobs := mix(t, "small", 25, 4)
	sum := 0.0
	for _, j := range jobs {
		sum += j.FullRuntime
	}
	cfg := Config{Nodes: 1, GPUsPerNode: 1, Check: true}
	r := simRun(t, jobs, cfg, policy(t, "sequential"))
	want := sum + NVMLCost(m.Full.Slices, m.Slices)
	if math.Abs(r.Makespan-want) > 1e-6 {
		t.Errorf("sequential makespan %v, want %v (sum of run times %v + one create)", r.Makespan, want, sum)
	}
	cfg.NoNVMLCost = true
	if r := simRun(t, jobs, cfg, policy(t, "sequential")); math.Abs(r.Makespan-sum) > 1e-6 {
		t.Errorf("sequential makespan without NVML time %v, want %v", r.Makespan, sum)
	}
	if r.Reconfigs != 1 || r.Restarts != 0 {
		t.Errorf("sequential: %d reconfigurations and %d restarts, want 1 and 0", r.Reconfigs, r.Restarts)
	}
}

// A 1g.5gb that runs long, then three 2g.10gb. First-fit puts the 1g at
// slot 0, which blocks the 2g placement at 0: only two 2g fit and the third
// waits for one to end. Reachability puts the 1g at slot 6 (12 layouts kept
// instead of 6), and all three 2g fit beside it. (migpro, which keeps slot 7
// for a 3g or 4g, places the 1g low here and ties first-fit: with nothing
// but the 1g seen yet, no rule can know the 2g are coming.)
func TestReachabilityBeatsFirstFit(t *testing.T) {
	jobs := []Job{
		{ID: "long-1g", FullRuntime: 1000, Mem: Fixed(2 * GiB), Profile: "1g.5gb"},
		{ID: "a-2g", Arrival: 1, FullRuntime: 600, Mem: Fixed(8 * GiB), Profile: "2g.10gb"},
		{ID: "b-2g", Arrival: 2, FullRuntime: 600, Mem: Fixed(8 * GiB), Profile: "2g.10gb"},
		{ID: "c-2g", Arrival: 3, FullRuntime: 600, Mem: Fixed(8 * GiB), Profile: "2g.10gb"},
	}
	ff := simRun(t, jobs, oneGPU, policy(t, "first-fit"))
	mp := simRun(t, jobs, oneGPU, policy(t, "reachability"))
	if mp.Makespan != 1000 {
		t.Errorf("reachability makespan %v, want 1000 (everything at once)", mp.Makespan)
	}
	if ff.Makespan != 1201 {
		t.Errorf("first-fit makespan %v, want 1201 (the third 2g waits for the first, done at 601)", ff.Makespan)
	}
	start := map[string]int{}
	for _, r := range ff.Runs {
		start[r.Job] = r.Start
	}
	if start["long-1g"] != 0 {
		t.Errorf("first-fit put the 1g at slot %d, want 0", start["long-1g"])
	}
	for _, r := range mp.Runs {
		if r.Job == "long-1g" && r.Start != 6 {
			t.Errorf("reachability put the 1g at slot %d, want 6", r.Start)
		}
	}
}

func TestNVMLTimeIsSerialisedPerGPU(t *testing.T) {
	m := model(t)
	// Three 1g jobs at once on one GPU: three creates queue on its NVML.
	var jobs []Job
	for i := 0; i < 3; i++ {
		jobs = append(jobs, Job{ID: string(rune('a' + i)), FullRuntime: 100, Mem: Fixed(2 * GiB)})
	}
	r := simRun(t, jobs, Config{Nodes: 1, GPUsPerNode: 1, Check: true}, policy(t, "migpro"))
	c := NVMLCost(1, m.Slices)
	var starts []float64
	for _, rr := range r.Runs {
		starts = append(starts, rr.Started)
	}
	sort.Float64s(starts)
	for i, s := range starts {
		if want := float64(i+1) * c; math.Abs(s-want) > 1e-9 {
			t.Errorf("run %d started at %v, want %v", i, s, want)
		}
	}
	if r.Reconfigs != 3 {
		t.Errorf("%d reconfigurations, want 3", r.Reconfigs)
	}
}

func TestPredictionMovesBeforeOOM(t *testing.T) {
	jobs := mix(t, "llm", 80, 5)
	base := simRun(t, jobs, Config{Seed: 5}, policy(t, "migpro"))
	pred := simRun(t, jobs, Config{Seed: 5}, policy(t, "migpro+predict"))
	if base.Restarts == 0 || base.Marks != 0 {
		t.Fatalf("migpro without prediction: %d restarts, %d marks; want OOM restarts only", base.Restarts, base.Marks)
	}
	if pred.Marks == 0 {
		t.Fatalf("the predictor marked nothing")
	}
	if pred.LostWork >= base.LostWork/2 {
		t.Errorf("work lost with prediction %v s, without %v s: want under half", pred.LostWork, base.LostWork)
	}
}

// Two PCIe-heavy 1g jobs on a two-GPU node: migpro packs them on one GPU,
// where they share its bandwidth (slowdown 2·20/25 = 1.6); the PCIe-aware
// option puts them on separate GPUs and neither slows down.
func TestPCIeAwareSeparatesHeavyJobs(t *testing.T) {
	jobs := []Job{
		{ID: "h1", FullRuntime: 100, Mem: Fixed(2 * GiB), PCIe: 20},
		{ID: "h2", FullRuntime: 100, Mem: Fixed(2 * GiB), PCIe: 20},
	}
	cfg := Config{Nodes: 1, GPUsPerNode: 2, NoNVMLCost: true, Check: true}
	packed := simRun(t, jobs, cfg, policy(t, "migpro"))
	apart := simRun(t, jobs, cfg, policy(t, "migpro+pcie"))
	if math.Abs(packed.Makespan-160) > 1e-9 {
		t.Errorf("packed makespan %v, want 160", packed.Makespan)
	}
	if math.Abs(apart.Makespan-100) > 1e-9 {
		t.Errorf("PCIe-aware makespan %v, want 100", apart.Makespan)
	}
	if apart.Runs[0].GPU == apart.Runs[1].GPU {
		t.Errorf("PCIe-aware placed both heavy jobs on GPU %d", apart.Runs[0].GPU)
	}
}

func TestStaticChoosesAFeasibleLayout(t *testing.T) {
	jobs := mix(t, "mixed", 60, 3)
	r := simRun(t, jobs, Config{Check: true}, policy(t, "static"))
	if r.Detail == "" || r.Reconfigs == 0 {
		t.Errorf("static: detail %q, %d reconfigurations", r.Detail, r.Reconfigs)
	}
	// The mix has whole-GPU jobs: an all-1g layout cannot run them.
	if _, err := Run(jobs, Config{}, policy(t, "static:all-1g")); err == nil {
		t.Errorf("all-1g ran whole-GPU jobs")
	}
}

func TestBadInput(t *testing.T) {
	good := Job{ID: "a", FullRuntime: 10, Mem: Fixed(GiB)}
	for _, tc := range []struct {
		name string
		edit func(*Job)
	}{
		{"negative arrival", func(j *Job) { j.Arrival = -1 }},
		{"zero run time", func(j *Job) { j.FullRuntime = 0 }},
		{"scaling above 1", func(j *Job) { j.Scaling = 2 }},
		{"peak above the GPU", func(j *Job) { j.Mem = Fixed(100 * GiB) }},
		{"start above peak", func(j *Job) { j.Mem.Start = 2 * GiB }},
		{"unknown profile", func(j *Job) { j.Profile = "9g.99gb" }},
		{"NaN PCIe", func(j *Job) { j.PCIe = math.NaN() }},
	} {
		j := good
		tc.edit(&j)
		if _, err := Run([]Job{j}, Config{}, policy(t, "migpro")); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if _, err := Run([]Job{good, good}, Config{}, policy(t, "migpro")); err == nil {
		t.Errorf("duplicate ids accepted")
	}
	if _, err := Run([]Job{good}, Config{Model: "v100"}, policy(t, "migpro")); err == nil {
		t.Errorf("unknown model accepted")
	}
	if _, err := Run([]Job{good}, Config{}, policy(t, "migpro")); err != nil {
		t.Errorf("the good job was refused: %v", err)
	}
}

// A static layout is made at time zero on each GPU's serialised NVML queue:
// on one GPU, all-1g's seven creates of 0.1 s make the instances ready at
// 0.1, 0.2, … 0.7 s, and each first job starts when its instance is ready.
func TestStaticLayoutCreatesQueue(t *testing.T) {
	m := model(t)
	var jobs []Job
	for i := 0; i < 7; i++ {
		jobs = append(jobs, Job{ID: string(rune('a' + i)), FullRuntime: 100, Mem: Fixed(2 * GiB)})
	}
	r := simRun(t, jobs, Config{Nodes: 1, GPUsPerNode: 1, Check: true}, policy(t, "static:all-1g"))
	if r.Reconfigs != 7 {
		t.Fatalf("%d reconfigurations, want the layout's 7 creates", r.Reconfigs)
	}
	var starts []float64
	for _, rr := range r.Runs {
		starts = append(starts, rr.Started)
	}
	sort.Float64s(starts)
	for i, s := range starts {
		if want := float64(i+1) * NVMLCost(1, m.Slices); math.Abs(s-want) > 1e-9 {
			t.Errorf("run %d started at %v, want %v", i, s, want)
		}
	}
}

// A job that asks for a 2g by name cannot run on an all-1g layout even
// though its memory would fit a 1g: the layout is refused up front, and the
// best-of choice skips it.
func TestStaticHonoursNamedRequests(t *testing.T) {
	jobs := []Job{{ID: "two", FullRuntime: 100, Mem: Fixed(2 * GiB), Profile: "2g.10gb"}}
	if _, err := Run(jobs, Config{Nodes: 1, GPUsPerNode: 1}, policy(t, "static:all-1g")); err == nil || !strings.Contains(err.Error(), "cannot hold job two") {
		t.Errorf("all-1g for a 2g request: %v", err)
	}
	r := simRun(t, jobs, Config{Nodes: 1, GPUsPerNode: 1, Check: true}, policy(t, "static"))
	if len(r.Runs) != 1 || r.Runs[0].Profile == "1g.5gb" {
		t.Errorf("best static layout ran %+v", r.Runs)
	}
}
