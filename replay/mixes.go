package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MixSpec asks for a generated workload.
type MixSpec struct {
	// Name is one of Mixes().
	Name string
	// Jobs is how many jobs; zero takes the mix's default.
	Jobs int
	// Seed makes the mix; the same seed gives the same jobs.
	Seed uint64
	// Ratio is the small:medium:large:full weights of the mixed mix
	// (default 4:0:1:1).
	Ratio [4]float64
	// Load is the offered load of the mixes with Poisson arrivals (stream,
	// pcie): arrivals come at Load times the rate the cluster's slices can
	// serve the mix at best. Zero takes the mix's default (stream 0.9, pcie
	// 0.7).
	Load float64
	// GPUs is the cluster size the arrival rate is set for.
	GPUs int
}

// MixInfo documents a mix.
type MixInfo struct {
	Name, About string
	Jobs        int
}

// Mixes lists the generated workloads (docs/replay-workloads.md has the details).
func Mixes() []MixInfo {
	return []MixInfo{
		{"small", "homogeneous small jobs (1g-sized, barely faster on more slices), all at t=0", 280},
		{"mixed", "small:medium:large:full jobs in --ratio proportions (default 4:0:1:1), all at t=0", 240},
		{"llm", "LLM inference whose KV cache grows past the memory its user declares, all at t=0", 120},
		{"pcie", "small and medium jobs, half of them PCIe-heavy (10 GB/s), Poisson arrivals at --load (default 0.7)", 280},
		{"stream", "Poisson arrivals at --load of a mix of every class above", 5000},
		{"online", "heterogeneous online requests, 1g to 7g (40:20:20:10:10 by count), Poisson arrivals at --load (default 0.85)", 1500},
	}
}

// class is one kind of job, with memory as a fraction of the whole GPU's.
// Its jobs request the plain profile with the class's compute slices by
// name, as a pod asks for nvidia.com/mig-2g.10gb.
type class struct {
	key            string
	slices         int
	memLo, memHi   float64 // fraction of the full profile's memory
	timeLo, timeHi float64 // full-GPU run time, s
	scaling        float64
}

var (
	smallJob  = class{"small", 1, 0.04, 0.10, 60, 240, 0.2}
	mediumJob = class{"medium", 2, 0.13, 0.23, 120, 480, 0.5}
	largeJob  = class{"large", 3, 0.27, 0.47, 240, 720, 0.8}
	fullJob   = class{"full", full, 0.52, 0.95, 300, 900, 1.0}
	// halfJob asks for the 4-slice profile; online mixes use it.
	halfJob = class{"half", 4, 0.30, 0.47, 240, 720, 0.9}
)

// llmModels are the LLM inference workloads: weights (and context) as a
// fraction of the GPU's memory; the KV cache then grows the footprint by
// growLo–growHi times over the run.
var llmModels = []struct {
	key            string
	weights        float64
	growLo, growHi float64
}{
	{"llm-1b", 0.08, 1.4, 1.9},
	{"llm-3b", 0.16, 1.3, 1.8},
	{"llm-7b", 0.30, 1.2, 1.6},
	{"llm-13b", 0.48, 1.2, 1.6},
}

// Generate makes a mix's jobs for a model.
func Generate(spec MixSpec, model *Model) ([]Job, error) {
	info, ok := mixInfo(spec.Name)
	if !ok {
		var names []string
		for _, m := range Mixes() {
			names = append(names, m.Name)
		}
		return nil, fmt.Errorf("unknown mix %q (known: %s)", spec.Name, strings.Join(names, ", "))
	}
	n := spec.Jobs
	if n == 0 {
		n = info.Jobs
	}
	if n < 1 || n > 1000000 {
		return nil, fmt.Errorf("jobs %d: want 1 to 1000000", n)
	}
	r := rand.New(rand.NewPCG(spec.Seed, 0x6d6967))
	g := gen{r: r, model: model, variants: map[string][]variant{}, vr: rand.New(rand.NewPCG(spec.Seed, 0x76617269))}
	jobs := make([]Job, n)
	switch spec.Name {
	case "small":
		for i := range jobs {
			jobs[i] = g.fixed(i, smallJob)
		}
	case "mixed":
		ratio := spec.Ratio
		if ratio == [4]float64{} {
			ratio = [4]float64{4, 0, 1, 1}
		}
		classes := []class{smallJob, mediumJob, largeJob, fullJob}
		for i := range jobs {
			jobs[i] = g.fixed(i, classes[g.weighted(ratio[:])])
		}
	case "llm":
		for i := range jobs {
			jobs[i] = g.llm(i)
		}
	case "pcie":
		for i := range jobs {
			c := smallJob
			if r.Float64() < 0.25 {
				c = mediumJob
			}
			jobs[i] = g.fixed(i, c)
			if r.Float64() < 0.5 {
				jobs[i].PCIe = 10
				jobs[i].Key += "-pcie"
			}
		}
		if err := g.poisson(jobs, spec, 0.7); err != nil {
			return nil, err
		}
	case "online":
		classes := []class{smallJob, mediumJob, largeJob, halfJob, fullJob}
		for i := range jobs {
			jobs[i] = g.fixed(i, classes[g.weighted([]float64{40, 20, 20, 10, 10})])
		}
		if err := g.poisson(jobs, spec, 0.85); err != nil {
			return nil, err
		}
	case "stream":
		g.stream(jobs)
		if err := g.poisson(jobs, spec, 0.9); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

func mixInfo(name string) (MixInfo, bool) {
	for _, m := range Mixes() {
		if m.Name == name {
			return m, true
		}
	}
	return MixInfo{}, false
}

type gen struct {
	r     *rand.Rand
	model *Model
	// Jobs recur: each class has a few workloads (its variants), and a job
	// is one run of a workload, with a little jitter. The workload is the
	// estimator's history key. vr draws the variants, apart from r, so
	// they do not depend on how many jobs are drawn.
	variants map[string][]variant
	vr       *rand.Rand
}

// variant is one recurring workload.
type variant struct {
	mem, runtime, grow float64
}

// variantsPerClass is how many workloads each class has.
const variantsPerClass = 6

func (g *gen) variant(key string, draw func(r *rand.Rand) variant) (int, variant) {
	vs, ok := g.variants[key]
	if !ok {
		for k := 0; k < variantsPerClass; k++ {
			vs = append(vs, draw(g.vr))
		}
		g.variants[key] = vs
	}
	k := g.r.IntN(len(vs))
	return k, vs[k]
}

func (g *gen) uniform(lo, hi float64) float64 { return lo + (hi-lo)*g.r.Float64() }

func (g *gen) weighted(w []float64) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	x := g.r.Float64() * total
	for i, v := range w {
		if x < v {
			return i
		}
		x -= v
	}
	return len(w) - 1
}

func (g *gen) bytes(frac float64) uint64 { return uint64(frac * float64(g.model.Full.Memory)) }

// fixed is a job of a class with a fixed footprint, declared correctly,
// requesting its class's profile when that profile holds it.
func (g *gen) fixed(i int, c class) Job {
	k, v := g.variant(c.key, func(r *rand.Rand) variant {
		return variant{mem: c.memLo + (c.memHi-c.memLo)*r.Float64(), runtime: c.timeLo + (c.timeHi-c.timeLo)*r.Float64()}
	})
	mem := g.bytes(min(v.mem*g.uniform(0.98, 1.02), c.memHi))
	j := Job{
		ID: fmt.Sprintf("%s-%d", c.key, i), FullRuntime: round(v.runtime * g.uniform(0.9, 1.1)),
		Scaling: c.scaling, Mem: Fixed(mem), Declared: mem, Key: fmt.Sprintf("%s-w%d", c.key, k), Iters: 100,
	}
	if p, ok := g.model.sliceProfile(c.slices); ok && p.Memory >= mem {
		j.Profile = p.Name
	}
	return j
}

// llm is an inference job whose user declares the weights' footprint; the
// KV cache grows from 5% of the run to its end.
func (g *gen) llm(i int) Job {
	m := llmModels[g.r.IntN(len(llmModels))]
	k, v := g.variant(m.key, func(r *rand.Rand) variant {
		return variant{grow: m.growLo + (m.growHi-m.growLo)*r.Float64(), runtime: 300 + 600*r.Float64()}
	})
	start := g.bytes(m.weights * g.uniform(0.99, 1.01))
	peak := min(uint64(float64(start)*v.grow*g.uniform(0.98, 1.02)), g.bytes(0.97))
	return Job{
		ID: fmt.Sprintf("%s-%d", m.key, i), FullRuntime: round(v.runtime * g.uniform(0.9, 1.1)), Scaling: 0.5,
		Mem:      Memory{Start: start, Peak: peak, GrowFrom: 0.05, GrowTo: 1},
		Declared: start, Key: fmt.Sprintf("%s-w%d", m.key, k), Iters: 200,
	}
}

// stream draws classes: small 55%, medium 10%, large 12%, full 5%, LLM 10%,
// PCIe-heavy small 8%.
func (g *gen) stream(jobs []Job) {
	weights := []float64{55, 10, 12, 5, 10, 8}
	for i := range jobs {
		switch k := g.weighted(weights); k {
		case 4:
			jobs[i] = g.llm(i)
		case 5:
			jobs[i] = g.fixed(i, smallJob)
			jobs[i].PCIe, jobs[i].Key = 10, jobs[i].Key+"-pcie"
		default:
			jobs[i] = g.fixed(i, []class{smallJob, mediumJob, largeJob, fullJob}[k])
		}
	}
}

// poisson gives the jobs Poisson arrivals at load times the best rate the
// cluster's slices can serve them at: jobs per second = load × slices ×
// GPUs / mean minimum slice-seconds per job.
func (g *gen) poisson(jobs []Job, spec MixSpec, defaultLoad float64) error {
	load := spec.Load
	if load == 0 {
		load = defaultLoad
	}
	if !(load > 0) || load > 100 {
		return fmt.Errorf("load %v: want a number above 0", load)
	}
	if spec.GPUs < 1 {
		return fmt.Errorf("mix %s needs the cluster's GPU count to set its arrival rate", spec.Name)
	}
	work := 0.0
	for i := range jobs {
		work += g.model.MinSliceSeconds(&jobs[i])
	}
	rate := load * float64(g.model.Slices*spec.GPUs) / (work / float64(len(jobs)))
	t := 0.0
	for i := range jobs {
		t += g.r.ExpFloat64() / rate
		jobs[i].Arrival = round(t)
	}
	return nil
}

func round(x float64) float64 { return math.Round(x*1000) / 1000 }

// ParseRatio reads small:medium:large:full weights such as 4:0:1:1.
func ParseRatio(s string) ([4]float64, error) {
	var out [4]float64
	parts := strings.Split(s, ":")
	if len(parts) != 4 {
		return out, fmt.Errorf("ratio %q: want four weights small:medium:large:full, e.g. 4:0:1:1", s)
	}
	total := 0.0
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return out, fmt.Errorf("ratio %q: weight %q is not a number ≥ 0", s, p)
		}
		out[i] = v
		total += v
	}
	if total == 0 {
		return out, fmt.Errorf("ratio %q: all weights are zero", s)
	}
	return out, nil
}
