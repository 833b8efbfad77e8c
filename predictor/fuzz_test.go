package predictor_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/migpro/migpro/predictor"
)

// FuzzObserve feeds arbitrary samples, NaN and infinite times and allocation
// counts that go backwards included, to migpro with the agent's settings and
// to the baseline: the predictor must never panic, never mark twice, and
// never report a forecast that is not a number.
func FuzzObserve(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}, uint64(1<<30), false)
	f.Fuzz(func(t *testing.T, data []byte, capacity uint64, baseline bool) {
		cfg := predictor.ForSeconds(predictor.Config{Capacity: max(capacity, 1)})
		if baseline {
			cfg = predictor.Config{Capacity: max(capacity, 1), Algorithm: predictor.Baseline, Horizon: 1e6}
		}
		p, err := predictor.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		marks := 0
		for len(data) >= 24 {
			s := predictor.Sample{
				T:         math.Float64frombits(binary.LittleEndian.Uint64(data)),
				Used:      binary.LittleEndian.Uint64(data[8:]),
				Requested: binary.LittleEndian.Uint64(data[16:]),
				// Allocation counts that jump, stall and go backwards.
				Allocs: binary.LittleEndian.Uint64(data[16:]) >> 20,
			}
			data = data[24:]
			if d, ok := p.Observe(s); ok {
				marks++
				if d.Confidence < 0 || d.Confidence > 1 || math.IsNaN(d.Confidence) {
					t.Fatalf("confidence %v", d.Confidence)
				}
			}
			if fc, ok := p.Forecast(1e7); ok && math.IsNaN(fc) {
				t.Fatal("NaN forecast")
			}
		}
		if marks > 1 {
			t.Fatalf("%d marks", marks)
		}
	})
}
