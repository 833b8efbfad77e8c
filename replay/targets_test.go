package replay

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkTargets measures issue 28's targets (Targets): per
// configuration, summed over seeds, the agent's policy (migpro) against
// every baseline. It runs on both OpenB pod lists when MIGPRO_OPENB_DIR
// names their folder, and on generated online streams (TargetConfigs).
// TARGET_SEEDS picks the seeds: "tune" (1-3, the default), "held" (4-6,
// kept apart from tuning) or a comma-separated list. TARGET_MIGPRO names
// another policy to measure in migpro's place (to try a variant against
// the same baselines). `migpro-lab replay --targets` prints the same
// figures as a table; with -v the benchmark logs that table too.
//
// Per configuration it reports the baselines' summed mean JCT over
// migpro's (jct-X/migpro, above 1: migpro better), NVML steps per job
// (migpro's and nvidia-dra's), fragmentation waits (migpro's and
// first-fit's) and the p95 arrival-to-start of 4g and 7g requests (migpro's
// over the best baseline's, at most 1 meets the target).
func BenchmarkTargets(b *testing.B) {
	seeds, err := TargetSeeds(os.Getenv("TARGET_SEEDS"))
	if err != nil {
		b.Fatal(err)
	}
	name := "migpro"
	if alt := os.Getenv("TARGET_MIGPRO"); alt != "" {
		name = alt
	}
	pol := policy(b, name)
	var rows []TargetRow
	for _, c := range TargetConfigs(os.Getenv("MIGPRO_OPENB_DIR")) {
		b.Run(c.Name, func(b *testing.B) {
			var row TargetRow
			for i := 0; i < b.N; i++ {
				if row, err = Targets(c, seeds, pol); err != nil {
					b.Fatal(err)
				}
			}
			for _, base := range TargetBaselines {
				b.ReportMetric(row.JCT[base], "jct-"+base+"/migpro")
			}
			b.ReportMetric(row.Steps, "migpro-steps/job")
			b.ReportMetric(row.DRASteps, "dra-steps/job")
			b.ReportMetric(float64(row.Frag), "migpro-frag")
			b.ReportMetric(float64(row.FirstFitFrag), "ff-frag")
			for _, s := range TargetSizes {
				if v, ok := row.P95[s]; ok {
					b.ReportMetric(v, "p95-"+s+"/best-baseline")
				}
			}
			rows = append(rows, row)
		})
	}
	var out strings.Builder
	if err := WriteTargets(&out, name, rows); err != nil {
		b.Fatal(err)
	}
	b.Log("\n" + out.String())
}

// The targets' figures are what Run gives each policy: on a small
// configuration the row's ratio and steps are those of the runs, and
// first-fit measured in migpro's place has a first-fit ratio of exactly 1
// and as many fragmentation waits as first-fit.
func TestTargetsAreTheRunsFigures(t *testing.T) {
	c := TargetConfig{Name: "online/a100-40gb/2gpu", Node: "a100-40gb", GPUs: 2, Jobs: func(m *Model, seed uint64) ([]Job, error) {
		return Generate(MixSpec{Name: "online", Jobs: 120, Seed: seed, Load: 0.9, GPUs: 2}, m)
	}}
	seeds := []uint64{1, 2}
	row, err := Targets(c, seeds, policy(t, "migpro"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel("a100-40gb")
	if err != nil {
		t.Fatal(err)
	}
	var migpro, dra float64
	var draSteps, draRuns int
	for _, seed := range seeds {
		jobs, err := c.Jobs(m, seed)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Model: "a100-40gb", Nodes: 1, GPUsPerNode: 2, Seed: int64(seed)}
		migpro += simRun(t, jobs, cfg, policy(t, "migpro")).MeanJCT
		r := simRun(t, jobs, cfg, policy(t, "nvidia-dra"))
		dra += r.MeanJCT
		draSteps += r.Reconfigs
		draRuns += len(r.Runs)
	}
	if got, want := row.JCT["nvidia-dra"], dra/migpro; got != want {
		t.Errorf("jct nvidia-dra/migpro %v, want %v from the runs", got, want)
	}
	if got, want := row.DRASteps, float64(draSteps)/float64(draRuns); got != want {
		t.Errorf("nvidia-dra steps/job %v, want %v", got, want)
	}
	self, err := Targets(c, seeds, policy(t, "first-fit"))
	if err != nil {
		t.Fatal(err)
	}
	if self.JCT["first-fit"] != 1 || self.Frag != self.FirstFitFrag {
		t.Errorf("first-fit against itself: ratio %v, frag %d vs %d; want 1 and equal", self.JCT["first-fit"], self.Frag, self.FirstFitFrag)
	}
	var out strings.Builder
	if err := WriteTargets(&out, "migpro", []TargetRow{row}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| online/a100-40gb/2gpu |") || !strings.Contains(out.String(), " of 1;") {
		t.Errorf("table:\n%s", out.String())
	}
}
