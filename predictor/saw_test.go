package predictor

import (
	"github.com/migpro/migpro/predictor/internal/ablate"
	"math"
	"testing"
)

// sawSeries is a 1 Hz series: a tooth of acts bytes filled over step seconds
// and freed, on a base that grows by grow bytes a second from 2 GiB. The
// step of 6.1 s makes the poll's phase drift by 0.1 s a tooth, so the
// peak's records come about a minute apart.
func sawSeries(grow, acts float64, n int) []Sample {
	const step = 6.1
	out := make([]Sample, n)
	for i := range out {
		t := float64(i)
		frac := math.Mod(t, step) / step
		out[i] = Sample{T: t, Used: uint64(2<<30 + grow*t + frac*acts)}
	}
	return out
}

// TestSawtoothGrowth: growth under a sawtooth read once a second is marked
// before usage reaches capacity, and not without the sawtooth reading (nor
// the climbs, which see the peak's records a minute apart as rounds); the
// same sawtooth on a flat base is never marked.
func TestSawtoothGrowth(t *testing.T) {
	const capacity = 10 << 30
	run := func(s []Sample, noSaw bool) (Mark, bool, float64) {
		p, err := New(ForSeconds(switchOff(Config{Capacity: capacity}, noSaw, ablate.Sawtooth|ablate.Climbs)))
		if err != nil {
			t.Fatal(err)
		}
		oom := math.Inf(1)
		for _, x := range s {
			if x.Used > capacity {
				oom = x.T
				break
			}
			p.Observe(x)
		}
		d, ok := p.Marked()
		return d, ok, oom
	}
	growing := sawSeries(12<<20, 3<<30, 2000)
	d, ok, oom := run(growing, false)
	if !ok || d.At >= oom || d.Reason != ReasonTimeToOOM {
		t.Fatalf("growth under a sawtooth: marked %v at %v (%s), OOM at %v", ok, d.At, d.Reason, oom)
	}
	if d, ok, _ := run(growing, true); ok {
		t.Errorf("without the sawtooth reading the windows marked it at %v: the series no longer tests the reading", d.At)
	}
	if d, ok, _ := run(sawSeries(0, 3<<30, 2000), false); ok {
		t.Fatalf("a sawtooth on a flat base was marked at %v", d.At)
	}
}
