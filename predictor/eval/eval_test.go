package eval

import (
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/tracegen"
)

// seeds is how many variants of each family the sweep scores. Two hundred
// keeps the test under a second while making a 1% false-mark rate visible.
const seeds = 200

func sweep(t *testing.T, alg predictor.Algorithm, horizon float64) (falseMarks, late map[string]int, all []Result) {
	t.Helper()
	falseMarks, late = map[string]int{}, map[string]int{}
	for seed := range uint64(seeds) {
		for _, fam := range tracegen.Families() {
			r, err := Score(fam.Generate(seed), Options{Config: predictor.Config{
				Algorithm: alg, Capacity: tracegen.Capacity, Horizon: horizon,
			}})
			if err != nil {
				t.Fatal(err)
			}
			if fam.Growing && (r.OOM == nil || int(*r.OOM) != fam.OOM) {
				t.Fatalf("%s seed %d: OOM %v, want %d", fam.Name, seed, r.OOM, fam.OOM)
			}
			if r.FalseMark {
				falseMarks[fam.Name]++
			}
			if fam.Growing && (r.LeadSamples == nil || *r.LeadSamples == 0) {
				late[fam.Name]++
			}
			all = append(all, r)
		}
	}
	return falseMarks, late, all
}

func TestMigproNoFalseMarksAndNoMissesAcrossSeeds(t *testing.T) {
	for _, h := range []float64{0, tracegen.Steps} {
		fm, late, rs := sweep(t, predictor.Migpro, h)
		if len(fm) != 0 {
			t.Errorf("horizon %v: false marks %v", h, fm)
		}
		if len(late) != 0 {
			t.Errorf("horizon %v: growing traces not marked before OOM %v", h, late)
		}
		if s := Summarize(rs); s.MeanLeadPct < 50 {
			t.Errorf("horizon %v: mean lead %.1f%%, want at least 50%%", h, s.MeanLeadPct)
		}
	}
}

// The baseline is the control: if it stopped making the mistakes migpro
// avoids, the traces would no longer test anything.
func TestBaselineIsFooledWhereMigproIsNot(t *testing.T) {
	fm, late, _ := sweep(t, predictor.Baseline, tracegen.Steps)
	for _, fam := range []string{"sawtooth", "warmup-plateau"} {
		if fm[fam] < seeds/2 {
			t.Errorf("baseline false marks on %s: %d of %d, expected most", fam, fm[fam], seeds)
		}
	}
	if late["late-growth"] < seeds/2 {
		t.Errorf("baseline missed late growth %d of %d times, expected most", late["late-growth"], seeds)
	}
}

func TestScoreFields(t *testing.T) {
	fam, err := tracegen.Lookup("qwen2-linear")
	if err != nil {
		t.Fatal(err)
	}
	tr := fam.Generate(tracegen.Seed)
	r, err := Score(tr, Options{Config: predictor.Config{Capacity: tracegen.Capacity}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mark == nil || r.OOM == nil || *r.OOM != 94 || r.FalseMark {
		t.Fatalf("result %+v", r)
	}
	lead := 94 - int(*r.Mark)
	if *r.LeadSamples != lead || *r.LeadPct != 100*float64(lead)/94 {
		t.Errorf("lead %d (%.2f%%), want %d (%.2f%%)", *r.LeadSamples, *r.LeadPct, lead, 100*float64(lead)/94)
	}
	if r.PeakErrorAt10Pct == nil || *r.PeakErrorAt10Pct > 15 {
		t.Errorf("peak error at 10%% = %v, want under 15%%", r.PeakErrorAt10Pct)
	}
	if r.Profile != nil {
		t.Errorf("profile %q without a profile list", *r.Profile)
	}

	flatFam, _ := tracegen.Lookup("flat")
	r, _ = Score(flatFam.Generate(tracegen.Seed), Options{Config: predictor.Config{Capacity: tracegen.Capacity}})
	if r.Mark != nil || r.OOM != nil || r.LeadSamples != nil || r.FalseMark {
		t.Errorf("flat: %+v", r)
	}
	// The same flat trace on an instance it does not fit is an OOM at t=1.
	r, _ = Score(flatFam.Generate(tracegen.Seed), Options{Config: predictor.Config{Capacity: 1 << 30}})
	if r.OOM == nil || *r.OOM != 1 || r.Mark == nil || *r.LeadSamples != 0 {
		t.Errorf("flat on 1 GiB: %+v", r)
	}
}
