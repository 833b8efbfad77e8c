package predictor_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/predictor"
)

const gib = 1 << 30

func mustNew(t testing.TB, cfg predictor.Config) *predictor.Predictor {
	t.Helper()
	p, err := predictor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// feed observes used(i) for t = 1..n and returns the t of the single mark
// (0 if none), failing if Observe reports a mark twice.
func feed(t *testing.T, p *predictor.Predictor, n int, used func(i int) float64) (float64, predictor.Mark) {
	t.Helper()
	var at float64
	var dec predictor.Mark
	for i := 1; i <= n; i++ {
		d, ok := p.Observe(predictor.Sample{T: float64(i), Used: uint64(used(i))})
		if ok && at != 0 {
			t.Fatalf("second mark at t=%d after t=%v", i, at)
		}
		if ok {
			at, dec = float64(i), d
		}
	}
	return at, dec
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  predictor.Config
		want string
	}{
		{predictor.Config{}, "capacity"},
		{predictor.Config{Capacity: 1, Algorithm: "magic"}, "unknown algorithm"},
		{predictor.Config{Capacity: 1, Algorithm: predictor.Baseline}, "needs a horizon"},
		{predictor.Config{Capacity: 1, Horizon: -1}, "horizon"},
		{predictor.Config{Capacity: 1, Window: 2}, "window"},
		{predictor.Config{Capacity: 1, Persist: -1}, "invalid config"},
		{predictor.Config{Capacity: 1, Scales: 5}, "scales 5"},
	} {
		_, err := predictor.New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want error containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestMigproMarksLinearGrowthOnceWithLead(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p := mustNew(t, predictor.Config{Capacity: 10 * gib})
	// 5 GiB + 60 MiB per step crosses 10 GiB at about t=85.
	used := func(i int) float64 { return 5*gib + float64(i)*60*(1<<20) + r.NormFloat64()*(20<<20) }
	at, d := feed(t, p, 84, used)
	if at == 0 {
		t.Fatal("no mark before the OOM at t≈85")
	}
	if at > 60 {
		t.Errorf("marked at t=%v, want a lead of at least 25 samples", at)
	}
	if d.Reason != predictor.ReasonTimeToOOM || d.TimeToOOM <= 0 || d.Forecast < 10*gib {
		t.Errorf("decision %+v: want time-to-OOM reason, positive TTO, forecast over capacity", d)
	}
	if d.Confidence <= 0.5 || d.Confidence > 1 {
		t.Errorf("confidence %v, want in (0.5, 1]", d.Confidence)
	}
	if got, ok := p.Marked(); !ok || got != d {
		t.Errorf("Marked() = %+v, %v; want the emitted decision", got, ok)
	}
}

func TestMigproIgnoresFlatBurstsAndPlateau(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	shapes := map[string]func(i int) float64{
		"flat near capacity": func(int) float64 { return 9*gib + r.NormFloat64()*(50<<20) },
		"bursts": func(int) float64 {
			if r.Float64() < 0.3 {
				return 3*gib + r.Float64()*6*gib
			}
			return 3 * gib
		},
		"warm-up then plateau": func(i int) float64 {
			return 8 * gib * (1 - 1/float64(1+i*i/16))
		},
	}
	for name, used := range shapes {
		p := mustNew(t, predictor.Config{Capacity: 10 * gib})
		if at, d := feed(t, p, 500, used); at != 0 {
			t.Errorf("%s: false mark at t=%v: %+v", name, at, d)
		}
	}
}

func TestMigproReactsToLateGrowth(t *testing.T) {
	p := mustNew(t, predictor.Config{Capacity: 10 * gib})
	used := func(i int) float64 {
		u := 4.0 * gib
		if i > 200 {
			u += float64(i-200) * 0.05 * gib // OOM 120 samples after onset
		}
		return u
	}
	at, _ := feed(t, p, 320, used)
	if at == 0 || at > 200+25 {
		t.Errorf("growth from t=200 marked at t=%v, want within 25 samples", at)
	}
}

func TestMinSamplesAndPersistGateTheMark(t *testing.T) {
	// Already over capacity at the first sample: the only immediate mark.
	p := mustNew(t, predictor.Config{Capacity: gib})
	if d, ok := p.Observe(predictor.Sample{T: 0, Used: 2 * gib}); !ok || d.Reason != predictor.ReasonOverCapacity {
		t.Fatalf("over capacity: %+v %v", d, ok)
	}
	// Steep growth must still wait for MinSamples and Persist.
	p = mustNew(t, predictor.Config{Capacity: 100 * gib, MinSamples: 10, Persist: 4})
	at, _ := feed(t, p, 60, func(i int) float64 { return float64(i) * gib })
	if at < 13 {
		t.Errorf("marked at t=%v, before MinSamples+Persist-1 = 13", at)
	}
}

func TestHorizonMode(t *testing.T) {
	used := func(i int) float64 { return 4*gib + float64(i)*0.05*gib }
	// At t=100 usage is 9 GiB: under capacity at the horizon, no mark.
	p := mustNew(t, predictor.Config{Capacity: 10 * gib, Horizon: 100})
	if at, _ := feed(t, p, 100, used); at != 0 {
		t.Errorf("horizon 100: marked at %v though usage stays at 9 GiB", at)
	}
	p = mustNew(t, predictor.Config{Capacity: 10 * gib, Horizon: 200})
	at, d := feed(t, p, 100, used)
	if at == 0 || d.Reason != predictor.ReasonHorizon || d.Horizon != 200 {
		t.Fatalf("horizon 200: mark at %v, %+v", at, d)
	}
	if d.Forecast < 14*gib || d.Forecast > 15*gib {
		t.Errorf("forecast %v GiB at horizon, want about 14", float64(d.Forecast)/gib)
	}
}

func TestDroppedSamples(t *testing.T) {
	p := mustNew(t, predictor.Config{Capacity: 10 * gib})
	p.Observe(predictor.Sample{T: 5, Used: gib})
	p.Observe(predictor.Sample{T: 4, Used: gib})
	p.Observe(predictor.Sample{T: nan(), Used: gib})
	p.Observe(predictor.Sample{T: 1e300, Used: gib}) // would overflow the fit
	if p.Samples() != 1 || p.Dropped() != 3 {
		t.Errorf("samples %d dropped %d, want 1 and 3", p.Samples(), p.Dropped())
	}
	if _, ok := p.Forecast(1e300); ok {
		t.Error("forecast at 1e300 claims to be a number")
	}
}

func nan() float64 { var z float64; return z / z }

func TestRecommendsSmallestProfileCoveringForecast(t *testing.T) {
	profiles := []estimator.ProfileSize{
		{Name: "7g.80gb", MemoryBytes: 80 * gib, Slices: 7},
		{Name: "1g.10gb", MemoryBytes: 10 * gib, Slices: 1},
		{Name: "2g.20gb", MemoryBytes: 20 * gib, Slices: 2},
		{Name: "1g.20gb", MemoryBytes: 20 * gib, Slices: 1},
		{Name: "3g.40gb", MemoryBytes: 40 * gib, Slices: 3},
	}
	used := func(i int) float64 { return 4*gib + float64(i)*0.1*gib }
	for _, tc := range []struct {
		context uint64
		want    string
	}{
		{0, "1g.20gb"},       // ~14 GiB at the horizon ×1.1 fits 20 GiB on one slice
		{8 * gib, "3g.40gb"}, // the context overhead pushes it past 20 GiB
	} {
		p := mustNew(t, predictor.Config{Capacity: 10 * gib, Horizon: 100, Profiles: profiles, ContextBytes: tc.context})
		_, d := feed(t, p, 100, used)
		if d.Profile != tc.want || !d.Fits {
			t.Errorf("context %d GiB: profile %q fits %v (forecast %.1f GiB), want %s", tc.context/gib, d.Profile, d.Fits, float64(d.Forecast)/gib, tc.want)
		}
	}
}

func TestBaselineConvergesOnceAndFreezes(t *testing.T) {
	used := func(i int) float64 { return 4*gib + float64(i)*0.1*gib }
	p := mustNew(t, predictor.Config{Algorithm: predictor.Baseline, Capacity: 10 * gib, Horizon: 100})
	at, d := feed(t, p, 100, used)
	if !p.Converged() || at == 0 || at > 6 {
		t.Fatalf("baseline: converged %v, mark at %v; want a mark by sample 6", p.Converged(), at)
	}
	if d.Reason != predictor.ReasonHorizon {
		t.Errorf("reason %s", d.Reason)
	}
	// A baseline that converged on "fits" stops looking: growth afterwards
	// goes unmarked. This is the weakness migpro fixes.
	p = mustNew(t, predictor.Config{Algorithm: predictor.Baseline, Capacity: 10 * gib, Horizon: 100})
	late := func(i int) float64 {
		if i < 30 {
			return 4 * gib
		}
		return 4*gib + float64(i-30)*0.2*gib
	}
	if at, _ := feed(t, p, 100, late); at != 0 {
		t.Errorf("baseline marked at %v after converging on a flat start", at)
	}
}

func TestBaselineUsesReuseRatio(t *testing.T) {
	// Requested grows to 20 GiB at the horizon; physical is half of it, so
	// the forecast must be about 10 GiB (+ z·σ, which is 0 here), not 20.
	p := mustNew(t, predictor.Config{Algorithm: predictor.Baseline, Capacity: 16 * gib, Horizon: 100})
	for i := 1; i <= 10; i++ {
		req := float64(i) * 0.2 * gib
		p.Observe(predictor.Sample{T: float64(i), Used: uint64(req / 2), Requested: uint64(req)})
	}
	f, ok := p.Forecast(100)
	if !ok || f < 9.9*gib || f > 10.1*gib {
		t.Errorf("forecast %.2f GiB, want 10", f/gib)
	}
	if _, marked := p.Marked(); marked {
		t.Error("marked though 10 GiB fits 16")
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	for _, alg := range []predictor.Algorithm{predictor.Baseline, predictor.Migpro} {
		p := mustNew(t, predictor.Config{Algorithm: alg, Capacity: 1 << 62, Horizon: 1e12})
		i := 0
		allocs := testing.AllocsPerRun(10000, func() {
			i++
			p.Observe(predictor.Sample{T: float64(i), Used: uint64(gib + i%977*1000), Requested: uint64(2*gib + i)})
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per sample", alg, allocs)
		}
	}
}

// BenchmarkObserve is the per-sample cost. "baseline" stops fitting once it
// converges, as the plain algorithm does; "baseline-fitting" never converges, which
// is its cost while it still learns.
func BenchmarkObserve(b *testing.B) {
	for _, v := range []struct {
		name string
		cfg  predictor.Config
		hz   float64 // samples per T unit; 0 means 1
	}{
		{"baseline", predictor.Config{Algorithm: predictor.Baseline}, 0},
		{"baseline-fitting", predictor.Config{Algorithm: predictor.Baseline, ConvergeTol: 1e-300}, 0},
		{"migpro", predictor.Config{Algorithm: predictor.Migpro, Horizon: 1e15}, 0},
		{"migpro-time-to-oom", predictor.Config{Algorithm: predictor.Migpro}, 0},
		// The shim's rate with the agent's settings: twenty samples per
		// 2 s bin, nineteen of them updating the bin's point in place.
		{"migpro-time-to-oom-10hz", predictor.ForSeconds(predictor.Config{Algorithm: predictor.Migpro}), 10},
	} {
		b.Run(v.name, func(b *testing.B) {
			cfg := v.cfg
			cfg.Capacity = 1 << 62
			if cfg.Algorithm == predictor.Baseline {
				cfg.Horizon = 1e15
			}
			p := mustNew(b, cfg)
			r := rand.New(rand.NewPCG(1, 1))
			used := make([]uint64, 4096)
			for i := range used {
				used[i] = uint64(4*gib + float64(i)*1e6 + r.NormFloat64()*1e7)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				p.Observe(predictor.Sample{T: float64(i) / max(1, v.hz), Used: used[i%len(used)] + uint64(i)*1000})
			}
		})
	}
}
