package replay

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Issue 28's targets: per configuration, summed over seeds, the agent's
// policy against what users run instead. BenchmarkTargets and
// `migpro-lab replay --targets` both compute them here, so the benchmark's
// metrics and the command's table are the same figures.

// TargetBaselines are the policies the agent's policy is measured against.
var TargetBaselines = []string{"first-fit", "nvidia-dra", "hami", "static"}

// TargetSizes are the request sizes whose p95 start time is a target.
var TargetSizes = []string{"4g", "7g"}

// TargetConfig is one configuration: a node and a way to draw its jobs.
type TargetConfig struct {
	Name, Node string
	GPUs       int
	Jobs       func(m *Model, seed uint64) ([]Job, error)
}

// TargetConfigs are the configurations: both OpenB pod lists (8× A100 at
// load 0.9, windows of 600 GPU pods) when openbDir names their folder, and
// generated online streams of 600 jobs at loads 0.8 and 0.9 on 1-8 A100s,
// 4 H100s and two mixed nodes.
func TargetConfigs(openbDir string) []TargetConfig {
	var confs []TargetConfig
	if openbDir != "" {
		for _, f := range []string{"openb_pod_list_default.csv", "openb_pod_list_gpushare20.csv"} {
			path := filepath.Join(openbDir, f)
			confs = append(confs, TargetConfig{"openb/" + f, "a100-40gb", 8, func(m *Model, seed uint64) ([]Job, error) {
				fh, err := os.Open(path) //nolint:gosec // the user names the trace folder
				if err != nil {
					return nil, err
				}
				defer fh.Close()
				jobs, _, err := ReadJobs(fh, m, MixSpec{Jobs: 600, Seed: seed, Load: 0.9, GPUs: 8})
				return jobs, err
			}})
		}
	}
	online := func(gpus int, load float64) func(m *Model, seed uint64) ([]Job, error) {
		return func(m *Model, seed uint64) ([]Job, error) {
			return Generate(MixSpec{Name: "online", Jobs: 600, Seed: seed, Load: load, GPUs: gpus}, m)
		}
	}
	for _, c := range []struct {
		node string
		gpus int
	}{{"a100-40gb", 1}, {"a100-40gb", 2}, {"a100-40gb", 4}, {"a100-40gb", 8}, {"h100-80gb", 4}, {"a100-40gb:2,h100-80gb:1", 3}, {"a100-40gb:4,h100-80gb:4", 8}} {
		for _, load := range []float64{0.8, 0.9} {
			confs = append(confs, TargetConfig{fmt.Sprintf("online/%s/%dgpu/load%.1f", c.node, c.gpus, load), c.node, c.gpus, online(c.gpus, load)})
		}
	}
	return confs
}

// The seed sets of the targets. Each configuration's figures are summed
// over one set; three seeds proved fewer than the 1% target needs (a row's
// sum moves by more than 1% from one set of three to the next,
// docs/replay.md), so the sets the report stands on have fifteen.
var (
	// TuneSeeds are the fifteen seeds the decision was tuned on: 1-3 and
	// 7-18 ("tune").
	TuneSeeds = []uint64{1, 2, 3, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}
	// ValidSeeds are fifteen seeds that were held out until they judged
	// the first two decision changes of issue 28's fourth round, and were
	// then used to choose between those changes ("valid"): they are
	// validation data now, not held out.
	ValidSeeds = []uint64{19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33}
	// HeldSeeds are fifteen seeds kept apart from tuning and validation
	// ("held"): no change is measured or chosen on them; the report is run
	// on them once at the end of a round that changed the decision (rounds
	// four and seven so far, docs/replay.md). A list naming any of them is
	// refused, so they cannot be looked at piecemeal.
	HeldSeeds = []uint64{34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48}
	// Tune3Seeds are the first three tuning seeds ("tune3"): the quick set
	// `make replay-report` (part of `make test`) runs, and the tuning set
	// of the earlier 3-seed figures.
	Tune3Seeds = []uint64{1, 2, 3}
	// Held3Seeds are the earlier 3-seed held-out set ("held3"), kept to
	// reproduce the figures of that time. They have been looked at many
	// times since, so they are no longer held out.
	Held3Seeds = []uint64{4, 5, 6}
)

// seedSet is a named seed set: its seeds and how a report's heading
// describes it.
type seedSet struct {
	seeds []uint64
	about string
}

// seedSetNamed is the named seed set of list ("" is tune).
func seedSetNamed(list string) (seedSet, bool) {
	set, ok := map[string]seedSet{
		"":      {TuneSeeds, "tune: the fifteen tuning seeds"},
		"tune":  {TuneSeeds, "tune: the fifteen tuning seeds"},
		"valid": {ValidSeeds, "valid: fifteen seeds once held out, used since to choose between decision changes"},
		"held":  {HeldSeeds, "held: the fifteen held-out seeds, never used to tune or to choose"},
		"tune3": {Tune3Seeds, "tune3: the first three tuning seeds (the quick set)"},
		"held3": {Held3Seeds, "held3: the earlier 3-seed held-out set, looked at since (tuning data now)"},
	}[strings.TrimSpace(list)]
	return set, ok
}

// TargetSeeds reads a seed set: "tune" or "" (TuneSeeds), "valid"
// (ValidSeeds), "held" (HeldSeeds), "tune3" (Tune3Seeds), "held3"
// (Held3Seeds) or a
// comma-separated list of seeds and ranges (7,8,49-63), which may not name
// a held-out seed.
func TargetSeeds(list string) ([]uint64, error) {
	if set, ok := seedSetNamed(list); ok {
		return append([]uint64(nil), set.seeds...), nil
	}
	held := map[uint64]bool{}
	for _, s := range HeldSeeds {
		held[s] = true
	}
	var seeds []uint64
	for _, f := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(f), "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		b := a
		if err == nil && isRange {
			b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		}
		if err != nil || b < a || b-a >= 10000 {
			return nil, fmt.Errorf("seeds %q: want tune, valid, held, tune3, held3 or a list such as 7,8,9 or 49-63", list)
		}
		for n := a; n <= b; n++ {
			if held[n] {
				return nil, fmt.Errorf("seeds %q: seed %d is in the held-out set (%d-%d), which runs only whole, as held", list, n, HeldSeeds[0], HeldSeeds[len(HeldSeeds)-1])
			}
			seeds = append(seeds, n)
		}
	}
	return seeds, nil
}

// SeedSetName describes a seed set for a report's heading: which named
// set it is, or "a list".
func SeedSetName(list string) string {
	if set, ok := seedSetNamed(list); ok {
		return set.about
	}
	return "a list"
}

// TargetRow is one configuration's figures, summed over the seeds.
type TargetRow struct {
	Config string
	// JCT is each baseline's summed mean JCT over the policy's (above 1:
	// the policy is better).
	JCT map[string]float64
	// Steps is NVML steps per job: the policy's and nvidia-dra's.
	Steps, DRASteps float64
	// StepCount and RunCount are the policy's NVML steps and runs, and
	// DRAStepCount and DRARunCount nvidia-dra's, summed over the seeds (so
	// steps per job can be pooled over the whole set).
	StepCount, RunCount, DRAStepCount, DRARunCount int
	// Frag is fragmentation waits: the policy's and first-fit's.
	Frag, FirstFitFrag int
	// P95 is, per size in TargetSizes that the stream asks for, the
	// policy's summed p95 arrival-to-start over the best baseline's, and
	// P95Best names that baseline.
	P95     map[string]float64
	P95Best map[string]string
	// JCTErr is, per baseline, the jackknife standard error of its JCT
	// ratio over the seeds (each seed left out in turn): how far the ratio
	// would move with another draw of as many seeds. Zero with one seed.
	JCTErr map[string]float64
}

// jctLine is the mean-JCT target's 1% line: a baseline whose JCT ratio
// (its mean JCT over the policy's) is under it is more than 1% ahead.
const jctLine = 0.99

// JCTMet reports whether the policy's mean JCT is within 1% of every
// baseline's or better.
func (r TargetRow) JCTMet() bool {
	for _, v := range r.JCT {
		if v < jctLine {
			return false
		}
	}
	return true
}

// P95Met reports whether the p95 start of every target size is no worse
// than the best baseline's.
func (r TargetRow) P95Met() bool {
	for _, v := range r.P95 {
		if v > 1 {
			return false
		}
	}
	return true
}

// Targets replays one configuration under the policy and every baseline for
// each seed and sums the figures.
func Targets(c TargetConfig, seeds []uint64, pol Strategy) (TargetRow, error) {
	tc, err := newTargetCase(c, seeds)
	if err != nil {
		return TargetRow{}, err
	}
	base, err := tc.baselines()
	if err != nil {
		return TargetRow{}, err
	}
	mine, err := tc.run(pol)
	if err != nil {
		return TargetRow{}, err
	}
	return targetRow(c.Name, mine, base), nil
}

// targetCase is one configuration with its jobs drawn for every seed, so
// several policies replay the same streams.
type targetCase struct {
	c     TargetConfig
	gpus  int
	seeds []uint64
	jobs  [][]Job
}

func newTargetCase(c TargetConfig, seeds []uint64) (*targetCase, error) {
	m, err := LoadModel(c.Node)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	tc := &targetCase{c: c, gpus: c.GPUs, seeds: seeds}
	if m.GPUsPerNode() > 0 {
		tc.gpus = m.GPUsPerNode()
	}
	for _, seed := range seeds {
		jobs, err := c.Jobs(m, seed)
		if err != nil {
			return nil, fmt.Errorf("%s seed %d: %w", c.Name, seed, err)
		}
		tc.jobs = append(tc.jobs, jobs)
	}
	return tc, nil
}

// policySums is one policy's figures on one configuration, summed over the
// seeds.
type policySums struct {
	name              string
	jct               float64
	perSeed           []float64 // mean JCT per seed
	steps, runs, frag int
	p95               map[string]float64 // summed p95 arrival-to-start per size
}

// run replays every seed's jobs under s.
func (tc *targetCase) run(s Strategy) (policySums, error) {
	sum := policySums{name: s.Name, p95: map[string]float64{}}
	for i, seed := range tc.seeds {
		r, err := Run(tc.jobs[i], Config{Model: tc.c.Node, Nodes: 1, GPUsPerNode: tc.gpus, Seed: int64(seed)}, s)
		if err != nil {
			return policySums{}, fmt.Errorf("%s seed %d: %s: %w", tc.c.Name, seed, s.Name, err)
		}
		sum.jct += r.MeanJCT
		sum.perSeed = append(sum.perSeed, r.MeanJCT)
		sum.steps += r.Reconfigs
		sum.runs += len(r.Runs)
		sum.frag += r.Fragmented
		for _, size := range TargetSizes {
			if w, ok := r.StartWait(size); ok {
				sum.p95[size] += w.P95
			}
		}
	}
	return sum, nil
}

// baselines replays every seed under each of TargetBaselines, in order.
func (tc *targetCase) baselines() ([]policySums, error) {
	var out []policySums
	for _, name := range TargetBaselines {
		ps, err := ParsePolicies(name)
		if err != nil {
			return nil, fmt.Errorf("%s: baseline %s: %w", tc.c.Name, name, err)
		}
		sum, err := tc.run(ps[0])
		if err != nil {
			return nil, err
		}
		out = append(out, sum)
	}
	return out, nil
}

// targetRow is the row of the policy's sums against the baselines' (in the
// order of TargetBaselines).
func targetRow(config string, mine policySums, base []policySums) TargetRow {
	row := TargetRow{Config: config, JCT: map[string]float64{}, JCTErr: map[string]float64{}, P95: map[string]float64{}, P95Best: map[string]string{}, Frag: mine.frag}
	for i, name := range TargetBaselines {
		b := base[i]
		row.JCT[name] = b.jct / mine.jct
		row.JCTErr[name] = jackknifeRatio(b.perSeed, mine.perSeed)
		switch name {
		case "nvidia-dra":
			row.DRASteps = float64(b.steps) / float64(b.runs)
			row.DRAStepCount, row.DRARunCount = b.steps, b.runs
		case "first-fit":
			row.FirstFitFrag = b.frag
		}
	}
	row.Steps = float64(mine.steps) / float64(mine.runs)
	row.StepCount, row.RunCount = mine.steps, mine.runs
	for _, size := range TargetSizes {
		if best, by := bestP95(base, size); best > 0 {
			row.P95[size], row.P95Best[size] = mine.p95[size]/best, by
		}
	}
	return row
}

// bestP95 is the lowest summed p95 start of size among the baselines that
// started such requests, and which baseline it is; 0 when none did.
func bestP95(base []policySums, size string) (float64, string) {
	best, by := -1.0, ""
	for _, b := range base {
		if v := b.p95[size]; v > 0 && (best < 0 || v < best) {
			best, by = v, b.name
		}
	}
	return max(best, 0), by
}

// jackknifeRatio is the jackknife standard error of sum(num)/sum(den) over
// paired samples: the ratio recomputed with each pair left out,
// sqrt((n-1)/n · Σ(θᵢ-θ̄)²). Zero for fewer than two pairs.
func jackknifeRatio(num, den []float64) float64 {
	n := len(num)
	if n < 2 || len(den) != n {
		return 0
	}
	var sn, sd float64
	for i := range num {
		sn, sd = sn+num[i], sd+den[i]
	}
	theta := make([]float64, n)
	for i := range num {
		theta[i] = (sn - num[i]) / (sd - den[i])
	}
	return jackknifeSE(theta)
}

// jackknifeSE is the jackknife standard error of an estimate from its
// leave-one-out values theta: sqrt((n-1)/n · Σ(θᵢ-θ̄)²).
func jackknifeSE(theta []float64) float64 {
	n := float64(len(theta))
	mean := 0.0
	for _, t := range theta {
		mean += t / n
	}
	ss := 0.0
	for _, t := range theta {
		ss += (t - mean) * (t - mean)
	}
	return math.Sqrt((n - 1) / n * ss)
}
