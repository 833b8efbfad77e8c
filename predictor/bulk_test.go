package predictor

import (
	"testing"

	"github.com/migpro/migpro/predictor/internal/ablate"
)

// loadSeries is a 10 Hz series: a CUDA context, then a load that rises at
// rate bytes/s in calls of call bytes until it stops at top, then flat. With
// call 0 the series carries no calls, as from a container without the shim.
func loadSeries(rate, call, top float64, n int) []Sample {
	const ctx = 512 << 20
	out := make([]Sample, n)
	for i := range out {
		t := float64(i) / 10
		pool := min(rate*max(t-2, 0), top)
		s := Sample{T: t, Used: uint64(ctx + pool)}
		if call > 0 {
			s.Allocs = 1 + uint64(pool/call) // the context's own call, then one per call bytes
		}
		out[i] = s
	}
	return out
}

// TestBulkRiseIsReadAsALoad: the same rise, stopping 1.2 GiB under
// capacity, is marked when it comes in the allocator's 20 MiB segments and
// not when it comes in 200 MiB tensor copies, nor when its calls are
// unknown. Without the gate the bulk rise is marked too, so the series tests
// the gate and not some other one.
func TestBulkRiseIsReadAsALoad(t *testing.T) {
	const capacity = 10 << 30
	const top = capacity - 512<<20 - 1200<<20
	run := func(s []Sample, noGate bool) (Mark, bool) {
		p, err := New(ForSeconds(switchOff(Config{Capacity: capacity}, noGate, ablate.BulkGate)))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range s {
			p.Observe(x)
		}
		return p.Marked()
	}
	const rate = 0.2 * (1 << 30)
	if _, ok := run(loadSeries(rate, 20<<20, top, 900), false); !ok {
		t.Fatal("a rise in 20 MiB segments toward capacity was not marked: the series no longer looks like growth")
	}
	if d, ok := run(loadSeries(rate, 200<<20, top, 900), false); ok {
		t.Errorf("a load in 200 MiB calls was marked at %.1f s", d.At)
	}
	if d, ok := run(loadSeries(rate, 0, top, 900), false); ok {
		t.Errorf("a rise with unknown calls was marked at %.1f s", d.At)
	}
	if _, ok := run(loadSeries(rate, 200<<20, top, 900), true); !ok {
		t.Error("without the gate the load in 200 MiB calls was not marked either: the test no longer tests the gate")
	}
}
