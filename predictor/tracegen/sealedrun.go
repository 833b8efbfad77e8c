package tracegen

import (
	"math"

	"github.com/migpro/migpro/predictor/trace"
)

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

// sampleSealed renders a run of shape s on an instance of size bytes whose
// workload plans to last planned seconds (its horizon, when s declares
// one), from n ticks of 1/ShimHz read through a set's own device and
// poller: tick(i) returns what the device holds at tick i, what its counter
// shows, the poll's stamp and whether a poll was taken (sets 7 and later
// call their models in it, in their own order). The first tick over the
// instance ends the run, read at once as the bytes the driver refused.
func sampleSealed(s SealedShape, size, planned float64, n int, tick func(i int) (truth, shown, stamp float64, taken bool)) SealedRun {
	run := SealedRun{Trace: trace.Trace{Name: s.Name}, Capacity: uint64(size)}
	if s.WithHorizon {
		run.Horizon = planned
	}
	for i := range n {
		truth, shown, stamp, taken := tick(i)
		if truth > size {
			run.Trace.Rows = append(run.Trace.Rows, trace.Row{T: stamp, Used: uint64(math.Ceil(truth))})
			break
		}
		if taken {
			run.Trace.Rows = append(run.Trace.Rows, trace.Row{T: stamp, Used: uint64(shown)})
		}
	}
	return run
}
