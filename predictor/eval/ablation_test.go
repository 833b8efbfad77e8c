package eval

import (
	"fmt"
	"strings"
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/internal/ablate"
	"github.com/migpro/migpro/predictor/tracegen"
)

// variant is one step between the baseline and migpro.
type variant struct {
	name string
	cfg  predictor.Config
}

// ablation measures each migpro addition by removing it alone, on the same
// seeded traces, with no horizon (migpro's own mode).
func ablation() []variant {
	full := predictor.Config{Algorithm: predictor.Migpro, Capacity: tracegen.Capacity}
	with := func(name string, f func(*predictor.Config)) variant {
		c := full
		f(&c)
		return variant{name, c}
	}
	return []variant{
		{"baseline (oracle horizon)", predictor.Config{Algorithm: predictor.Baseline, Capacity: tracegen.Capacity}},
		{"migpro", full},
		with("- trend gate", func(c *predictor.Config) { *c = without(*c, ablate.TrendGate) }),
		with("- short windows", func(c *predictor.Config) { c.Scales = 1 }),
		with("- persistence", func(c *predictor.Config) { c.Persist = 1 }),
		with("- min samples (3)", func(c *predictor.Config) { c.MinSamples = 3 }),
		with("- sliding windows (one fit from start)", func(c *predictor.Config) { c.Window, c.Scales = 4*tracegen.Steps, 1 }),
	}
}

type row struct {
	Summary
	lateReaction float64 // mean samples from the onset of late growth to the mark
}

func runVariant(t *testing.T, v variant, nSeeds int) row {
	t.Helper()
	var rs []Result
	var r row
	var lateN int
	for seed := range uint64(nSeeds) {
		for _, fam := range tracegen.Families() {
			res, err := Score(fam.Generate(seed), Options{Config: v.cfg})
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, res)
			if fam.Name == "late-growth" {
				lateN++
				if res.Mark != nil {
					r.lateReaction += *res.Mark - 60
				} else {
					r.lateReaction += float64(fam.OOM - 60) // never: as late as the OOM
				}
			}
		}
	}
	r.Summary = Summarize(rs)
	r.lateReaction /= float64(lateN)
	return r
}

// TestAblation prints the contribution of each addition (go test -v -run
// Ablation ./predictor/eval) and checks that each one earns its place: taking
// it away must cost false marks or reaction time.
func TestAblation(t *testing.T) {
	const nSeeds = 100
	rows := map[string]row{}
	var b strings.Builder
	fmt.Fprintf(&b, "%-40s %8s %9s %10s %11s %9s\n", "variant", "in time", "lead %", "false", "late react", "err@10%")
	for _, v := range ablation() {
		r := runVariant(t, v, nSeeds)
		rows[v.name] = r
		fmt.Fprintf(&b, "%-40s %4d/%-4d %8.1f%% %5d/%-5d %10.1f %8.1f%%\n", v.name, r.MarkedInTime, r.Growing,
			r.MeanLeadPct, r.FalseMarks, r.NonGrowing, r.lateReaction, r.MeanPeakErrGrowing)
	}
	t.Log("\n" + b.String())

	full := rows["migpro"]
	if full.FalseMarks != 0 || full.MarkedInTime != full.Growing {
		t.Errorf("migpro: %+v", full)
	}
	for _, name := range []string{"- trend gate", "- min samples (3)", "- persistence"} {
		if rows[name].FalseMarks == 0 {
			t.Errorf("%s: no false marks without it; the addition is not needed", name)
		}
	}
	if r := rows["- sliding windows (one fit from start)"]; r.MarkedInTime >= full.MarkedInTime {
		t.Errorf("fit from start: %d marked in time vs %d; the window buys nothing", r.MarkedInTime, full.MarkedInTime)
	}
	if rows["- short windows"].lateReaction <= full.lateReaction+5 {
		t.Errorf("short windows: late reaction %.1f vs %.1f; the addition buys nothing", rows["- short windows"].lateReaction, full.lateReaction)
	}
}
