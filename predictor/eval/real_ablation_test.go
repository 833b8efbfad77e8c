package eval

import (
	"fmt"
	"strings"
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/internal/ablate"
	"github.com/migpro/migpro/predictor/tracegen"
)

// realAblationSeeds keeps the ablation on framework-shaped series within a
// few seconds per variant.
const realAblationSeeds = 50

// realAblation takes away, one at a time, each setting the agent's
// configuration adds for series in seconds, and each gate.
func realAblation() []variant {
	full := predictor.ForSeconds(predictor.Config{Capacity: tracegen.Capacity})
	with := func(name string, f func(*predictor.Config)) variant {
		c := full
		f(&c)
		return variant{name, c}
	}
	return []variant{
		{"migpro (agent settings)", full},
		with("- 2 s bins (1 s bins, same 24 s minimum)", func(c *predictor.Config) { c.Bin, c.MinSamples = 1, 24 }),
		with("- seconds lead (3 x elapsed)", func(c *predictor.Config) { c.LeadFactor, c.BulkLeadFactor, c.BlindLeadFactor = 3, 3, 3 }),
		with("- jump gate", func(c *predictor.Config) { *c = without(*c, ablate.JumpGate) }),
		with("- bytes per allocation call (every rise read as growth)", func(c *predictor.Config) { *c = without(*c, ablate.BulkGate) }),
		with("- sawtooth reading", func(c *predictor.Config) { *c = without(*c, ablate.Sawtooth) }),
		with("- trend gate", func(c *predictor.Config) { *c = without(*c, ablate.TrendGate) }),
		with("- persistence", func(c *predictor.Config) { c.Persist = 1 }),
		with("- minimum time (3 bins)", func(c *predictor.Config) { c.MinSamples = 3 }),
	}
}

// TestRealAblation prints what each setting buys on the framework-shaped
// families, tuned and held out, at both rates (go test -v -run
// TestRealAblation ./predictor/eval), and fails if taking one away no longer
// costs false marks or lead, or taking the sawtooth reading away no longer
// costs missed runs.
func TestRealAblation(t *testing.T) {
	type agg struct {
		falseMarks, quiet, missed, growing int
		fastLead, peakErr                  float64
		errN                               int
	}
	res := map[string]agg{}
	var b strings.Builder
	fmt.Fprintf(&b, "| variant | false marks | missed | min lead, fast growth at 10 Hz (s) | peak error, growing (%%) |\n|---|---|---|---|---|\n")
	for _, v := range realAblation() {
		rows, err := ScoreReal(v.cfg, allReal(), realAblationSeeds)
		if err != nil {
			t.Fatal(err)
		}
		var a agg
		for _, r := range rows {
			if r.Growing {
				a.growing += r.Seeds
				a.missed += r.Missed
				a.peakErr += r.MeanPeakErr
				a.errN++
			} else {
				a.quiet += r.Seeds
				a.falseMarks += r.FalseMarks
			}
			if r.Family == "fast-growth-after-load" && r.Hz == tracegen.ShimHz {
				a.fastLead = r.MinLead
			}
		}
		a.peakErr /= float64(a.errN)
		res[v.name] = a
		fmt.Fprintf(&b, "| %s | %d/%d | %d/%d | %.1f | %.1f |\n", v.name, a.falseMarks, a.quiet, a.missed, a.growing, a.fastLead, round1(a.peakErr))
	}
	t.Log("\n" + b.String())
	full := res["migpro (agent settings)"]
	if r := res["- sawtooth reading"]; r.missed <= full.missed {
		t.Errorf("- sawtooth reading: %d missed against %d; the reading buys nothing", r.missed, full.missed)
	}
	// The minimum time costs nothing here once the bytes per call are read;
	// it is kept for series this table does not hold (its row shows it).
	for _, name := range []string{"- seconds lead (3 x elapsed)", "- bytes per allocation call (every rise read as growth)", "- trend gate", "- persistence"} {
		if r := res[name]; r.falseMarks <= full.falseMarks {
			t.Errorf("%s: %d false marks against %d; the setting buys nothing", name, r.falseMarks, full.falseMarks)
		}
	}
}

// TestJumpGateOnPreallocation: with the bytes per call read, the jump gate's
// share is small, so it is measured where it acts, on a vLLM family whose KV
// cache is preallocated in one step, over 300 seeds at both rates: taking it
// away must still cost false marks.
func TestJumpGateOnPreallocation(t *testing.T) {
	var fam []tracegen.RealFamily
	for _, f := range allReal() {
		if f.Name == "vllm-0.90-load-0.15-0.4" {
			fam = append(fam, f)
		}
	}
	full := predictor.ForSeconds(predictor.Config{Capacity: tracegen.Capacity})
	noJump := full
	noJump = without(noJump, ablate.JumpGate)
	count := func(c predictor.Config) int {
		rows, err := ScoreReal(c, fam, 300)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rows {
			n += r.FalseMarks
		}
		return n
	}
	with, without := count(full), count(noJump)
	t.Logf("%s, 300 seeds at both rates: %d false marks with the jump gate, %d without", fam[0].Name, with, without)
	if without <= with {
		t.Errorf("the jump gate buys nothing: %d false marks without it, %d with it", without, with)
	}
}
