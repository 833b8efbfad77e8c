package predictor_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/migpro/migpro/predictor"
)

func TestTrackerPerContainerAndConcurrent(t *testing.T) {
	tr := predictor.NewTracker()
	if err := tr.Start("a", predictor.Config{}); err == nil {
		t.Error("Start without capacity succeeded")
	}
	const n = 8
	for i := range n {
		if err := tr.Start(fmt.Sprint(i), predictor.Config{Capacity: 10 * gib}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Start("0", predictor.Config{Capacity: gib}); err == nil {
		t.Error("second Start of the same container succeeded")
	}
	var wg sync.WaitGroup
	marks := make([]int, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprint(i)
			for s := 1; s <= 200; s++ {
				used := 4.0 * gib
				if i%2 == 0 { // even containers grow towards an OOM at ~120
					used += float64(s) * 0.05 * gib
				}
				if _, ok := tr.Observe(id, predictor.Sample{T: float64(s), Used: uint64(used)}); ok {
					marks[i]++
				}
			}
		})
	}
	wg.Wait()
	for i, m := range marks {
		want := 1 - i%2
		if m != want {
			t.Errorf("container %d: %d marks, want %d", i, m, want)
		}
		if _, ok := tr.Marked(fmt.Sprint(i)); ok != (want == 1) {
			t.Errorf("container %d: Marked %v", i, ok)
		}
	}
	peak, ok := tr.Stop("1")
	if !ok || peak != 4*gib {
		t.Errorf("Stop: peak %d %v, want 4 GiB", peak, ok)
	}
	if _, ok := tr.Observe("1", predictor.Sample{T: 500, Used: 1}); ok {
		t.Error("observed a stopped container")
	}
	if _, ok := tr.Stop("1"); ok {
		t.Error("second Stop succeeded")
	}
}
