package predictor_test

import (
	"testing"

	"github.com/migpro/migpro/predictor"
)

// markAt feeds used(t) at hz samples per second for d seconds and returns the
// time of the mark, or -1.
func markAt(t *testing.T, cfg predictor.Config, hz, d float64, used func(float64) float64) float64 {
	t.Helper()
	p := mustNew(t, cfg)
	for i := 0; float64(i)/hz <= d; i++ {
		tt := float64(i) / hz
		if dec, ok := p.Observe(predictor.Sample{T: tt, Used: uint64(used(tt))}); ok {
			return dec.At
		}
	}
	return -1
}

// Windows count time, not samples: the same growth read at 10 Hz and at 1 Hz
// is marked within one bin of the same time.
func TestTheSamplingRateDoesNotChangeTheDecision(t *testing.T) {
	grow := func(t float64) float64 { return 2*gib + t*40e6 }
	cfg := predictor.ForSeconds(predictor.Config{Capacity: 10 * gib})
	fast, slow := markAt(t, cfg, 10, 400, grow), markAt(t, cfg, 1, 400, grow)
	if fast < 0 || slow < 0 {
		t.Fatalf("not marked: %v at 10 Hz, %v at 1 Hz", fast, slow)
	}
	if d := fast - slow; d > cfg.Bin+1 || d < -(cfg.Bin+1) {
		t.Errorf("marked at %.1f s at 10 Hz and %.1f s at 1 Hz", fast, slow)
	}
	// Before bins, MinSamples counted samples: at 10 Hz a mark came ten
	// times sooner in time, from 1.6 s of data.
	if fast < float64(predictor.SecondsMinSamples)*predictor.SecondsBin {
		t.Errorf("marked at %.1f s, before %d bins of data", fast, predictor.SecondsMinSamples)
	}
}

// A chunked load to 45% of the instance followed by a one-shot preallocation
// to 90% (vLLM's start) is never marked, at either rate; a load followed by
// growth that reaches the OOM 47 s later is marked at least 5 s ahead.
func TestLoadThenPreallocationIsNotMarked(t *testing.T) {
	cfg := predictor.ForSeconds(predictor.Config{Capacity: 10 * gib})
	vllm := func(t float64) float64 {
		switch {
		case t < 12: // 4 GiB of weights at about 0.35 GiB/s, in 400 MiB chunks
			return 0.5*gib + float64(int(t*0.35*gib/(400<<20)))*(400<<20)
		case t < 14:
			return 4.5 * gib
		}
		return 9 * gib
	}
	grows := func(t float64) float64 { return 0.5*gib + min(t, 5)*0.5*gib + max(0, t-5)*0.15*gib }
	const oom = 5 + 7/0.15 // 3 GiB at 5 s, 10 GiB 46.7 s later
	for _, hz := range []float64{10, 1} {
		if at := markAt(t, cfg, hz, 300, vllm); at >= 0 {
			t.Errorf("%g Hz: load and preallocation marked at %.1f s", hz, at)
		}
		if at := markAt(t, cfg, hz, oom, grows); at < 0 || at > oom-5 {
			t.Errorf("%g Hz: growth to the OOM at %.1f s marked at %.1f s, want 5 s ahead", hz, oom, at)
		}
	}
}
