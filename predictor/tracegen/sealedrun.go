package tracegen

import "github.com/migpro/migpro/predictor/trace"

// SealedRun is one rendered run of a shape of a sealed held-out set (sets 2
// to 7: Sealed2Shape.Generate to Sealed7Shape.Generate). Each set keeps its
// own generator, written apart; only the run they render is shared.
type SealedRun struct {
	Trace trace.Trace
	// Capacity is the instance's memory in bytes.
	Capacity uint64
	// Horizon is the declared planned length in seconds; 0 when the run
	// declares none.
	Horizon float64
}
