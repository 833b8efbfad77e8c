package predictor_test

import (
	"github.com/migpro/migpro/predictor/internal/ablate"
	"testing"

	"github.com/migpro/migpro/predictor"
)

// A slow load to 70% of the instance, a profiling spike, then the cache
// reserved at once to 95% (a vLLM start, NVML only): the windows that hold
// the load see a steep, noisy rise that ends near capacity, and marked it
// before the load gate. With the gate it is never marked, at either rate;
// growth that goes on from the load to the OOM still is, 5 s ahead.
func TestAWindowHoldingTheLoadDoesNotMarkItsEnd(t *testing.T) {
	const gb = 1e9
	const rate, to, spike = 0.15 * gb, 7 * gb, 1.5 * gb // a 43 s load
	const end = (to - 0.5*gb) / rate
	vllm := func(t float64) float64 {
		switch {
		case t < end:
			return 0.5*gb + rate*t
		case t < end+2, t >= end+4 && t < end+5.5:
			return to
		case t < end+4:
			return to + spike
		}
		return 9.5 * gb
	}
	grows := func(t float64) float64 { return 0.5*gb + min(t, 5)*0.5*gb + max(0, t-5)*0.15*gb }
	const oom = 5 + 7.5/0.15
	cfg := predictor.ForSeconds(predictor.Config{Capacity: 10 * gb})
	off := ablate.Without(cfg, ablate.LoadGate).(predictor.Config)
	ungated := 0
	for _, hz := range []float64{10, 1} {
		if at := markAt(t, cfg, hz, 300, vllm); at >= 0 {
			t.Errorf("%g Hz: load, spike and reservation marked at %.1f s", hz, at)
		}
		if markAt(t, off, hz, 300, vllm) >= 0 {
			ungated++
		}
		if at := markAt(t, cfg, hz, oom, grows); at < 0 || at > oom-5 {
			t.Errorf("%g Hz: growth to the OOM at %.1f s marked at %.1f s, want 5 s ahead", hz, oom, at)
		}
	}
	if ungated == 0 {
		t.Error("without the load gate the vLLM start is not marked either: the test no longer measures the gate")
	}
}
