package tracegen

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/migpro/migpro/predictor/trace"
)

// Capacity is the instance the traces are shaped for: 10 GiB, a 1g.10gb.
const Capacity uint64 = 10 << 30

// Steps is every trace's length; one t per iteration, starting at 1, so a
// single --horizon fits them all.
const Steps = 120

const (
	gib = float64(1 << 30)
	mib = float64(1 << 20)
)

// Family is one trace shape.
type Family struct {
	Name string
	// Growing families exceed Capacity at OOM (a t value); the others never do.
	Growing bool
	OOM     int
	gen     func(r *rand.Rand) []float64 // used bytes for t = 1..Steps
	// requested, when set, adds requested and reserved columns.
	requested bool
}

// Families lists every shape, growing ones first.
func Families() []Family {
	return []Family{
		{Name: "qwen2-linear", Growing: true, OOM: 94, gen: linearTo(94, 12.23e9, 24*mib)},
		{Name: "llama3-linear", Growing: true, OOM: 72, gen: linearTo(72, 16.63e9, 32*mib), requested: true},
		{Name: "step-growth", Growing: true, OOM: 96, gen: stepGrowth},
		{Name: "warmup-then-growth", Growing: true, OOM: 91, gen: warmupThenGrowth},
		{Name: "late-growth", Growing: true, OOM: 111, gen: lateGrowth},
		{Name: "flat", gen: flat},
		{Name: "bursts", gen: bursts},
		{Name: "sawtooth", gen: sawtooth},
		{Name: "training-epochs", gen: epochs},
		{Name: "warmup-plateau", gen: warmupPlateau},
	}
}

// Lookup finds a family by name.
func Lookup(name string) (Family, error) {
	for _, f := range Families() {
		if f.Name == name {
			return f, nil
		}
	}
	return Family{}, fmt.Errorf("tracegen: no family %q", name)
}

// Generate renders the family for one seed. Growing families are pinned so
// that the first sample over Capacity is exactly at OOM whatever the noise,
// which keeps the anchor numbers (94, 72) exact across seeds.
func (f Family) Generate(seed uint64) trace.Trace {
	r := rand.New(rand.NewPCG(seed, 0x6d696770726f)) // "migpro"
	used := f.gen(r)
	c := float64(Capacity)
	for i := range used {
		t := i + 1
		switch {
		case !f.Growing || t < f.OOM:
			used[i] = math.Min(used[i], c-64*mib)
		case t == f.OOM:
			used[i] = math.Max(used[i], c+16*mib)
		}
		used[i] = math.Max(used[i], 256*mib)
	}
	tr := trace.Trace{Name: f.Name, HasRequested: f.requested, HasReserved: f.requested}
	for i, u := range used {
		row := trace.Row{T: float64(i + 1), Used: uint64(u)}
		if f.requested {
			// The allocator reuses freed blocks, so the program asks for more
			// than it physically holds; the physical share drifts down as
			// fragmentation grows. The cache rounds up to 2 MiB blocks.
			share := 0.82 - 0.06*float64(i)/Steps
			row.Requested = uint64(u / share)
			row.Reserved = uint64(math.Ceil(u*1.12/(2*mib)) * 2 * mib)
		}
		tr.Rows = append(tr.Rows, row)
	}
	return tr
}

func noise(r *rand.Rand, sd float64) float64 { return r.NormFloat64() * sd }

// linearTo grows linearly so the line crosses Capacity just before oom and
// reaches peak at the last step: inference with a growing KV cache.
func linearTo(oom int, peak, sd float64) func(*rand.Rand) []float64 {
	return func(r *rand.Rand) []float64 {
		c := float64(Capacity)
		crossAt := float64(oom) - 0.5
		slope := (peak - c) / (Steps - crossAt)
		base := c - slope*crossAt
		out := make([]float64, Steps)
		for i := range out {
			out[i] = base + slope*float64(i+1) + noise(r, sd)
		}
		return out
	}
}

// stepGrowth adds a block every 12 steps, like a cache that doubles a bucket.
func stepGrowth(r *rand.Rand) []float64 {
	out := make([]float64, Steps)
	for i := range out {
		out[i] = 3.6*gib + float64((i+1)/12)*0.9*gib + noise(r, 16*mib)
	}
	return out
}

// warmupThenGrowth loads fast to 5 GiB, then grows slowly: the fit from the
// start sees the ramp and overshoots.
func warmupThenGrowth(r *rand.Rand) []float64 {
	out := make([]float64, Steps)
	for i := range out {
		t := float64(i + 1)
		out[i] = 5*gib*(1-math.Exp(-t/3)) + 0.055*gib*t + noise(r, 24*mib)
	}
	return out
}

// lateGrowth is flat for 60 steps, then leaks: a baseline that converged on
// the flat part never looks again.
func lateGrowth(r *rand.Rand) []float64 {
	out := make([]float64, Steps)
	for i := range out {
		t := float64(i + 1)
		out[i] = 5*gib + noise(r, 24*mib)
		if t > 60 {
			out[i] += (t - 60) * 0.1 * gib
		}
	}
	return out
}

func flat(r *rand.Rand) []float64 {
	out := make([]float64, Steps)
	for i := range out {
		out[i] = 6*gib + noise(r, 48*mib)
	}
	return out
}

// bursts holds 4 GiB and takes a temporary buffer of up to 4.5 GiB on about
// one step in five.
func bursts(r *rand.Rand) []float64 {
	out := make([]float64, Steps)
	for i := range out {
		out[i] = 4*gib + noise(r, 32*mib)
		if r.Float64() < 0.2 {
			out[i] += r.Float64() * 4.5 * gib
		}
	}
	return out
}

// sawtooth fills a buffer from 3 to 7.5 GiB over 15 steps, then frees it.
func sawtooth(r *rand.Rand) []float64 {
	out := make([]float64, Steps)
	for i := range out {
		out[i] = 3*gib + float64(i%15)/14*4.5*gib + noise(r, 24*mib)
	}
	return out
}

// epochs trains at 5 GiB and peaks at 8 GiB in the evaluation step that ends
// each 20-step epoch.
func epochs(r *rand.Rand) []float64 {
	out := make([]float64, Steps)
	for i := range out {
		out[i] = 5*gib + noise(r, 40*mib)
		if (i+1)%20 >= 18 || (i+1)%20 == 0 {
			out[i] = 8*gib + noise(r, 40*mib)
		}
	}
	return out
}

// warmupPlateau rises to 7.5 GiB with a time constant of 6 steps, then holds.
func warmupPlateau(r *rand.Rand) []float64 {
	out := make([]float64, Steps)
	for i := range out {
		t := float64(i + 1)
		out[i] = 0.5*gib + 7*gib*(1-math.Exp(-t/6)) + noise(r, 32*mib)
	}
	return out
}

// Seed is the seed of the checked-in traces.
const Seed uint64 = 1
