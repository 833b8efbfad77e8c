package tracegen

import "github.com/migpro/migpro/predictor/trace"

// SealedShape is one shape of a sealed held-out set (SealedShapes' sets 2
// and later: Sealed2Shapes, Sealed3Shapes, …): an NVML-only series
// (t, used_bytes) following a publicly described way a workload uses GPU
// memory, on an instance the seed draws. Each set keeps its own generator,
// device and poller models, written apart and described on its page
// (docs/predictor-sealedN.md); only this shape and the run it renders are
// shared, so the scorer reads every set alike.
type SealedShape struct {
	Name string
	// Growing shapes run out of their instance; quiet ones never do.
	Growing bool
	// WithHorizon says the run declares its planned length; the run's
	// Horizon then carries it.
	WithHorizon bool
	// Seed0 is added to every seed the shape is rendered with.
	Seed0 uint64
	// render is the set's generator bound to this shape's workload
	// (renderWith); it reads the shape's fields, so a copy with
	// WithHorizon changed declares, or not, its planned length.
	render func(s SealedShape, seed uint64, hz float64) SealedRun
}

// Generate renders one run of the shape at hz (ShimHz or NVMLHz; both
// NVML-only) from seed. The same seed at both rates reads the same levels.
func (s SealedShape) Generate(seed uint64, hz float64) SealedRun {
	return s.render(s, seed, hz)
}

// renderWith binds a set's generator to one shape's workload: w writes the
// workload's levels in the set's own terms, gen renders them through the
// set's device and poller.
func renderWith[W any](gen func(SealedShape, W, uint64, float64) SealedRun, w W) func(SealedShape, uint64, float64) SealedRun {
	return func(s SealedShape, seed uint64, hz float64) SealedRun { return gen(s, w, seed, hz) }
}

// SealedRun is one rendered run of a SealedShape.
type SealedRun struct {
	Trace trace.Trace
	// Capacity is the instance's memory in bytes.
	Capacity uint64
	// Horizon is the declared planned length in seconds; 0 when the run
	// declares none.
	Horizon float64
}
