package predictor

import "testing"

// segment is one piece of a synthetic series: a ramp up to level bytes at
// rate bytes/s (rate 0, or a level under the usage: a step), then a hold of
// hold s.
type segment struct{ level, rate, hold float64 }

// feedSegments feeds the segments at hz from 0.5 GB (the context) on a
// 10 GB instance, NVML only, and returns the time of the mark or -1, and
// the time of the OOM or -1.
func feedSegments(t *testing.T, hz float64, segs []segment) (mark, oom float64) {
	t.Helper()
	const capacity = 10e9
	p := agent(t, Config{Capacity: capacity})
	mark, oom = -1, -1
	used, now, dt := 0.5e9, 0.0, 1/hz
	feed := func() bool {
		now += dt
		if _, ok := p.Observe(Sample{T: now, Used: uint64(used)}); ok && mark < 0 {
			mark = now
		}
		if used > capacity {
			oom = now
			return false
		}
		return true
	}
	for _, s := range segs {
		if s.level < used {
			used = s.level
			if !feed() {
				return mark, oom
			}
		}
		for used < s.level {
			if s.rate == 0 {
				used = s.level
			} else {
				used = min(s.level, used+s.rate*dt)
			}
			if !feed() {
				return mark, oom
			}
		}
		used = s.level
		for end := now + s.hold; now < end; {
			if !feed() {
				return mark, oom
			}
		}
	}
	return mark, oom
}

// A model server loading models one after another, with pauses between
// them, ends flat under capacity: each load stopped, so the run of rises
// the loads make is episodes, and the last load (3.5 s at 1 GB/s, ending at
// 85 %) is judged on its own evidence, too short to be a trend. The same
// last load that goes on steadily to the OOM is growth, marked 5 s ahead.
func TestStairsEpisodesAfterPauses(t *testing.T) {
	quiet := []segment{{3e9, 1e9, 5}, {5e9, 1e9, 8}, {8.5e9, 1e9, 300}}
	growing := []segment{{3e9, 1e9, 5}, {5e9, 1e9, 8}, {8e9, 0.5e9, 0}, {11e9, 0.3e9, 0}}
	for _, hz := range []float64{10, 1} {
		if mark, _ := feedSegments(t, hz, quiet); mark >= 0 {
			t.Errorf("%g Hz: three loads with pauses, flat at 85 %%, marked at %.1f s", hz, mark)
		}
		mark, oom := feedSegments(t, hz, growing)
		if oom < 0 || mark < 0 || (hz == 10 && oom-mark < 5) {
			t.Errorf("%g Hz: growth after two loads marked at %.1f s, OOM at %.1f s: want a mark 5 s ahead", hz, mark, oom)
		}
	}
}

// Training steps read once a second: each step's activations rise for
// 5.5 s from 30 % to 63 % and are freed. A poll sees the rise, then the
// memory back at the base before the run of rises has stopped: the
// container is not running out, whatever the rate of the rise was. The
// same rise that holds its top instead is marked (its OOM, at 0.6 GB/s, is
// projected within 10 s), so the test measures the fall.
func TestStairsRiseGivenBackNotMarked(t *testing.T) {
	teeth := []segment{{3e9, 0.5e9, 5}}
	for range 40 {
		teeth = append(teeth, segment{6.3e9, 0.6e9, 0}, segment{3e9, 0, 2.5})
	}
	if mark, _ := feedSegments(t, 1, teeth); mark >= 0 {
		t.Errorf("1 Hz: training steps from 30 %% to 63 %% marked at %.1f s", mark)
	}
	if mark, _ := feedSegments(t, 1, []segment{{3e9, 0.5e9, 5}, {6.3e9, 0.6e9, 300}}); mark < 0 {
		t.Error("1 Hz: the same rise that holds its top is not marked: the test no longer measures the fall")
	}
}

// Read once a second, a fast load is one poll's jump. After it and a
// pause, growth is a run of its own, as after a load of several rises:
// fast growth from 40 % at 0.5 GB/s is marked 5 s before its OOM, which
// the windows (24 s before any mark) would not see in time.
func TestStairsGrowthAfterJumpAndPause(t *testing.T) {
	segs := []segment{{0.5e9, 0, 2}, {1e9, 0, 1}, {1.5e9, 0, 1}, {4e9, 0, 5}, {11e9, 0.5e9, 0}}
	mark, oom := feedSegments(t, 1, segs)
	if oom < 0 || mark < 0 || oom-mark < 5 {
		t.Fatalf("1 Hz: growth after a one-poll load and a pause marked at %.1f s, OOM at %.1f s: want 5 s ahead", mark, oom)
	}
}
