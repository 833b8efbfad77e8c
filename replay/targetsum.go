package replay

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// The targets' verdicts: per target of issue 28, how many rows meet it and,
// for every row that misses it, which baseline wins there and by how much,
// in words a closing note can quote.

// DecisionBench is the command that measures the decision-time target,
// which the replay does not (it times nothing).
const DecisionBench = "go test -run '^$' -bench Decision -benchtime 20000x ./partitioner/"

// TargetMiss is one row that misses a target and what beats the policy
// there, worst first.
type TargetMiss struct {
	Config string
	By     []string
}

// TargetVerdict is one target over the rows. Per-row targets count Met of
// Rows and list Misses; a whole-set target (NVML steps per job) has Rows 0,
// Whole set and its figure in Figure.
type TargetVerdict struct {
	Target      string
	Met, Rows   int
	Whole       bool
	WholeMet    bool
	Figure      string
	Misses      []TargetMiss
	NotMeasured bool
	// Noise, for mean JCT, says how much the rows' ratios move with the
	// seeds drawn (TargetRow.JCTErr).
	Noise string
}

// Verdicts judges the rows against each target, in the order issue 28
// states them.
func Verdicts(policy string, rows []TargetRow) []TargetVerdict {
	jct := TargetVerdict{Target: "mean JCT within 1% of every baseline's or better", Rows: len(rows)}
	frag := TargetVerdict{Target: "fragmentation waits no more than first-fit's", Rows: len(rows)}
	p95 := TargetVerdict{Target: fmt.Sprintf("p95 arrival-to-start of %s no worse than any baseline's", strings.Join(TargetSizes, " and ")), Rows: len(rows)}
	var steps, runs, draSteps, draRuns int
	var meanSteps, meanDRA float64
	for _, r := range rows {
		if r.JCTMet() {
			jct.Met++
		} else {
			jct.Misses = append(jct.Misses, TargetMiss{r.Config, jctWinners(r)})
		}
		if r.Frag <= r.FirstFitFrag {
			frag.Met++
		} else {
			frag.Misses = append(frag.Misses, TargetMiss{r.Config, []string{fragWinner(policy, r)}})
		}
		if r.P95Met() {
			p95.Met++
		} else {
			p95.Misses = append(p95.Misses, TargetMiss{r.Config, p95Winners(policy, r)})
		}
		steps, runs, draSteps, draRuns = steps+r.StepCount, runs+r.RunCount, draSteps+r.DRAStepCount, draRuns+r.DRARunCount
		meanSteps += r.Steps
		meanDRA += r.DRASteps
	}
	jct.Noise = jctNoise(rows)
	nvml := TargetVerdict{Target: "NVML steps per job at most half of nvidia-dra's over the whole set", Whole: true}
	if runs > 0 && draRuns > 0 {
		mine, dra := float64(steps)/float64(runs), float64(draSteps)/float64(draRuns)
		nvml.WholeMet = mine <= dra/2
		nvml.Figure = fmt.Sprintf("%.2f against nvidia-dra's %.2f, pooled over every run of every row (at most %.2f meets it); %.2f against %.2f as the mean of the rows",
			mine, dra, dra/2, meanSteps/float64(len(rows)), meanDRA/float64(len(rows)))
	}
	dec := TargetVerdict{Target: "decision time under 50 µs per request on a busy 8-GPU node", Whole: true, NotMeasured: true,
		Figure: "not measured by the replay, which times nothing: " + DecisionBench}
	return []TargetVerdict{jct, nvml, frag, p95, dec}
}

// jctWinners names every baseline more than 1% ahead of the policy on mean
// JCT, the furthest ahead first.
func jctWinners(r TargetRow) []string {
	var names []string
	for name, v := range r.JCT {
		if v < jctLine {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool { return r.JCT[names[i]] < r.JCT[names[j]] })
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = fmt.Sprintf("%s ahead by %.1f%% (mean JCT %s ÷ policy %.3f", name, 100*(1-r.JCT[name]), name, r.JCT[name])
		if e := r.JCTErr[name]; e > 0 {
			out[i] += fmt.Sprintf(" ± %.3f", e)
			if jctLine-r.JCT[name] < 2*e {
				out[i] += ", within two standard errors of the 1% line"
			}
		}
		out[i] += ")"
	}
	return out
}

// fragWinner says by how many fragmentation waits first-fit beats the
// policy.
func fragWinner(policy string, r TargetRow) string {
	d := r.Frag - r.FirstFitFrag
	if r.FirstFitFrag == 0 {
		return fmt.Sprintf("first-fit has %d fewer: none against %s's %d", d, policy, r.Frag)
	}
	return fmt.Sprintf("first-fit has %d fewer: %d against %s's %d (%.1f%% more)", d, r.FirstFitFrag, policy, r.Frag, 100*float64(d)/float64(r.FirstFitFrag))
}

// jctNoise sums up the jackknife standard errors of the ratios within 10%
// of 1, where the 1% line is decided: the median and the largest, with its
// row and baseline.
func jctNoise(rows []TargetRow) string {
	var errs []float64
	worst, where := 0.0, ""
	for _, r := range rows {
		for _, name := range TargetBaselines {
			e := r.JCTErr[name]
			if v := r.JCT[name]; e <= 0 || v < 0.9 || v > 1.1 {
				continue // a ratio far from 1 is on one side of the 1% line whatever its noise
			}
			errs = append(errs, e)
			if e > worst {
				worst, where = e, r.Config+" against "+name
			}
		}
	}
	if len(errs) == 0 {
		return ""
	}
	sort.Float64s(errs)
	return fmt.Sprintf("seed noise (jackknife standard error over these seeds of the %d ratios within 10%% of 1): median %.3f, largest %.3f (%s)",
		len(errs), errs[len(errs)/2], worst, where)
}

// p95Winners names, per target size the policy is behind on, the baseline
// with the lowest p95 and the policy's p95 over it.
func p95Winners(policy string, r TargetRow) []string {
	var out []string
	for _, size := range TargetSizes {
		if v, ok := r.P95[size]; ok && v > 1 {
			out = append(out, fmt.Sprintf("%s: %s ahead, %s's p95 is %.3f× its (%.1f%% longer)", size, r.P95Best[size], policy, v, 100*(v-1)))
		}
	}
	return out
}

// WriteTargets prints the rows as the table of docs/replay.md, then each
// target's verdict: how many rows meet it and, per row missed, the
// baseline that wins and by how much.
func WriteTargets(w io.Writer, policy string, rows []TargetRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | %s | steps/job %s (nvidia-dra) | frag waits %s (first-fit) | p95 start %s: %s ÷ best baseline (which) |\n",
		strings.Join(TargetBaselines, " | "), policy, policy, strings.Join(TargetSizes, ", "), policy)
	fmt.Fprintf(&b, "|---|%s---|---|---|\n", strings.Repeat("---|", len(TargetBaselines)))
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |", r.Config)
		for _, name := range TargetBaselines {
			if v := r.JCT[name]; v < jctLine {
				fmt.Fprintf(&b, " **%.3f** |", v)
			} else {
				fmt.Fprintf(&b, " %.3f |", v)
			}
		}
		fmt.Fprintf(&b, " %.2f (%.2f) | %d (%d) |", r.Steps, r.DRASteps, r.Frag, r.FirstFitFrag)
		var p []string
		for _, size := range TargetSizes {
			if v, ok := r.P95[size]; ok {
				p = append(p, fmt.Sprintf("%.2f (%s)", v, r.P95Best[size]))
			} else {
				p = append(p, "-")
			}
		}
		fmt.Fprintf(&b, " %s |\n", strings.Join(p, ", "))
	}
	if len(rows) > 0 {
		fmt.Fprintf(&b, "\ntargets of %s (each row summed over the seeds):\n", policy)
		for _, v := range Verdicts(policy, rows) {
			switch {
			case v.NotMeasured:
				fmt.Fprintf(&b, "- %s: %s\n", v.Target, v.Figure)
			case v.Whole:
				verdict := "not met"
				if v.WholeMet {
					verdict = "met"
				}
				fmt.Fprintf(&b, "- %s: %s: %s\n", v.Target, verdict, v.Figure)
			default:
				fmt.Fprintf(&b, "- %s: met in %d of %d rows\n", v.Target, v.Met, v.Rows)
				if v.Noise != "" {
					fmt.Fprintf(&b, "    %s\n", v.Noise)
				}
				for _, m := range v.Misses {
					fmt.Fprintf(&b, "    missed %s: %s\n", m.Config, strings.Join(m.By, "; "))
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
