package predictor

import (
	"testing"

	"github.com/migpro/migpro/predictor/internal/ablate"
)

// staircase feeds, at 10 Hz, a load from the context to load bytes at
// loadRate bytes/s, a pause of pause s, then steps of step bytes every gap
// s until stop bytes (0: until the OOM), then flat for 120 s. It returns the
// time of the mark, or -1, and the time of the OOM, or -1; the mark itself
// is in *got when got is not nil.
func staircase(t *testing.T, cfg Config, load, loadRate, pause, step, gap, stop float64, got ...*Mark) (mark, oom float64) {
	t.Helper()
	const capacity = 10e9
	cfg.Capacity = capacity
	p := agent(t, cfg)
	mark, oom = -1, -1
	used, tick := 0.5e9, 0
	feed := func(u float64) bool {
		tick++
		if d, ok := p.Observe(Sample{T: float64(tick) / 10, Used: uint64(u)}); ok && mark < 0 {
			mark = float64(tick) / 10
			for _, g := range got {
				*g = d
			}
		}
		if u > capacity {
			oom = float64(tick) / 10
			return false
		}
		return true
	}
	for used < load {
		used += loadRate / 10
		feed(used)
	}
	for range int(pause * 10) {
		feed(used)
	}
	for stop == 0 || used+step <= stop {
		for range int(gap * 10) {
			if !feed(used) {
				return mark, oom
			}
		}
		used += step
		if !feed(used) {
			return mark, oom
		}
	}
	for range 1200 {
		feed(used)
	}
	return mark, oom
}

// A cache growing in steady steps after a pause is marked on the run's rate,
// NVML only, well before its OOM; without the reading of runs (ablate.Stairs) the
// binned windows see it only at the OOM.
func TestStairsMarkSteadySteps(t *testing.T) {
	var d Mark
	mark, oom := staircase(t, Config{}, 4e9, 0.6e9, 10, 0.25e9, 1.5, 0, &d)
	if oom < 0 || mark < 0 || oom-mark < 5 {
		t.Fatalf("steady steps: mark at %v, OOM at %v: want a mark at least 5 s ahead", mark, oom)
	}
	// The mark is the run's: its OOM projected within NearTime, the peak
	// it forecasts (the run carried on) beyond the instance, and, carried
	// on at its rate, the run more likely than not over capacity by the
	// end of NearTime (a window's fit over the load and the pause says
	// about 0.13 here).
	if d.Reason != ReasonTimeToOOM || d.TimeToOOM <= 0 || d.TimeToOOM > SecondsNearTime || d.Forecast <= 10e9 || d.Confidence < 0.5 {
		t.Fatalf("steady steps: mark %+v: want time to OOM in (0, %d] s, a forecast over 10 GB, confidence over 0.5", d, SecondsNearTime)
	}
	off, oomOff := staircase(t, switchOff(Config{}, true, ablate.Stairs), 4e9, 0.6e9, 10, 0.25e9, 1.5, 0)
	if off >= 0 && oomOff-off >= 5 {
		t.Fatalf("without the stairs marked %v s ahead: the test no longer measures the stairs", oomOff-off)
	}
}

// A staircase that stops at 75 % after a load is far from its OOM when it
// stops: no mark.
func TestStairsIgnoreStoppingStaircase(t *testing.T) {
	if mark, _ := staircase(t, Config{}, 4e9, 0.6e9, 3, 0.45e9, 3, 7.5e9); mark >= 0 {
		t.Fatalf("warm-up staircase marked at %v", mark)
	}
}

// A load from the container's start is never read as a run that can mark,
// however close to capacity it ends; one step after a pause is not a trend.
func TestStairsIgnoreLoadAndSingleStep(t *testing.T) {
	if mark, _ := staircase(t, Config{}, 9.3e9, 1e9, 0, 0, 1, 0.1); mark >= 0 {
		t.Fatalf("a load to 93 %% marked at %v", mark)
	}
	if mark, _ := staircase(t, Config{}, 6e9, 0.3e9, 5, 3.5e9, 1, 9.6e9); mark >= 0 {
		t.Fatalf("a single step to 95 %% marked at %v", mark)
	}
}

// With a horizon, slow steps that would carry the peak past capacity long
// before the known end are marked by a quarter of their way to the OOM (by
// the runs of rises or by the windows: both see these steps).
func TestStairsHorizonMarksEarly(t *testing.T) {
	var d Mark
	mark, oom := staircase(t, Config{Horizon: 900}, 4e9, 0.6e9, 10, 0.1e9, 6, 0, &d)
	if oom < 0 || mark < 0 || mark > oom/4 {
		t.Fatalf("slow steps with a horizon: mark at %v, OOM at %v: want a mark by %v", mark, oom, oom/4)
	}
	if d.Reason != ReasonHorizon || d.Horizon != 900 || d.Forecast <= 10e9 {
		t.Fatalf("slow steps with a horizon: mark %+v: want the horizon's reason and a forecast over 10 GB", d)
	}
}

// BenchmarkStairsCheck is the cost the runs of rises add to a sample of a
// growing series, the worst case: an eligible run that has not stopped,
// whose check reads the rate, the gaps' spread and the time to OOM. A quiet
// sample costs one comparison (BenchmarkObserve's series never rises by a
// quantum).
func BenchmarkStairsCheck(b *testing.B) { benchStairsCheck(b, 0) }

// BenchmarkStairsCheckHorizon is the same with a horizon: the check then
// also reads both halves of the run and the silence before its latest step
// (stairs_trend.go), O(stairsRing) each.
func BenchmarkStairsCheckHorizon(b *testing.B) { benchStairsCheck(b, 3600) }

func benchStairsCheck(b *testing.B, horizon float64) {
	p := agent(b, Config{Capacity: 10e9, Horizon: horizon})
	tick := 0
	feed := func(u float64) {
		tick++
		p.Observe(Sample{T: float64(tick) / 10, Used: uint64(u)})
	}
	for u := 0.5e9; u < 4e9; u += 0.06e9 {
		feed(u)
	}
	for range 100 {
		feed(4e9)
	}
	hold := 15 // ticks a step is held: 1.5 s, or 3 s with a horizon, whose
	// run must span 16 s over the ring's 8 rises
	if horizon > 0 {
		hold = 30
	}
	for u := 4e9; u < 7e9; u += 0.25e9 {
		for range hold {
			feed(u)
		}
	}
	s := &p.alg.(*migpro).stairs
	now := float64(tick) / 10
	if _, _, ok := s.rate(now, p.cfg.BulkBytes, stairsMinGaps, horizon > 0); !ok {
		b.Fatal("the run cannot mark: the benchmark measures the quiet path")
	}
	b.ReportAllocs()
	for b.Loop() {
		s.check(p, now)
	}
}
