package replay

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// WriteTable prints one row per policy: the policy name left-aligned,
// numbers right-aligned, and what the policy ran with last.
func WriteTable(w io.Writer, results []*Result) error {
	rows := [][]string{{"policy", "makespan s", "jobs/s", "mean JCT s", "p95 JCT s", "mem util", "reconfigs",
		"steps/job", "waits", "idle-fixable", "frag", "restarts (marked)", "lost s", "÷ lower bound", "detail"}}
	only, multi := false, false
	for _, r := range results {
		name := r.starred()
		only = only || r.SimulatorOnly()
		multi = multi || r.Nodes > 1
		rows = append(rows, []string{name, fmt.Sprintf("%.0f", r.Makespan), fmt.Sprintf("%.4f", r.Throughput),
			fmt.Sprintf("%.0f", r.MeanJCT), fmt.Sprintf("%.0f", r.P95JCT), fmt.Sprintf("%.1f%%", 100*r.MemUtil),
			fmt.Sprint(r.Reconfigs), fmt.Sprintf("%.2f", r.StepsPerJob()), fmt.Sprint(r.Waits), fmt.Sprint(r.Replaceable),
			fmt.Sprint(r.Fragmented), fmt.Sprintf("%d (%d)", r.Restarts, r.Marks), fmt.Sprintf("%.0f", r.LostWork),
			fmt.Sprintf("%.2f", r.Ratio), r.Detail})
	}
	if len(results) > 0 {
		rows = append(rows, []string{"lower bound", fmt.Sprintf("%.0f", results[0].LowerBound), "", "", "", "", "", "", "", "", "", "", "",
			"1.00", "each job on its cheapest profile for slices and memory slots together, arrivals respected"})
	}
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	last := len(widths) - 1
	for _, row := range rows {
		var b strings.Builder
		for i, c := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			switch i {
			case 0:
				b.WriteString(c + pad)
			case last:
				b.WriteString("  " + c)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	if only {
		if _, err := fmt.Fprintln(w, SimulatorOnlyNote(multi)); err != nil {
			return err
		}
	}
	return nil
}

// SimulatorOnlyNote is the footnote of a table with policies marked *;
// multi says the cluster had more than one node.
func SimulatorOnlyNote(multi bool) string {
	note := "* simulator only: the agent's --policy does not offer it (a baseline, or parts the agent lacks)"
	if multi {
		note += "; on more than one node every policy is, the agent's too: the agent places within its own node, " +
			"the cluster scheduler picks the node, and the replay models that choice (docs/replay-policies.md, Cluster-level choice)"
	}
	return note
}

// Comparison is one migpro policy against one other policy.
type Comparison struct {
	Migpro, Other string
	// Speedup is the other's makespan over migpro's (above 1: migpro is
	// faster); JCT the other's mean completion time over migpro's.
	Speedup, JCT float64
}

// Compare sets each migpro policy present (migpro, migpro+predict) against
// every baseline present (sequential, static, first-fit, nvidia-dra, hami,
// reachability).
func Compare(results []*Result) []Comparison {
	baseline := map[string]bool{"sequential": true, "first-fit": true, "nvidia-dra": true, "hami": true, "reachability": true, "migpro": true}
	var out []Comparison
	for _, m := range results {
		if m.Policy != "migpro" && m.Policy != "migpro+predict" {
			continue
		}
		for _, o := range results {
			if o == m || (!baseline[o.Policy] && !isStatic(o.Policy)) {
				continue
			}
			if m.Policy == "migpro" && o.Policy == "migpro" {
				continue
			}
			out = append(out, Comparison{Migpro: m.Policy, Other: o.Policy,
				Speedup: safeDiv(o.Makespan, m.Makespan), JCT: safeDiv(o.MeanJCT, m.MeanJCT)})
		}
	}
	return out
}

func isStatic(name string) bool { return len(name) >= 6 && name[:6] == "static" }

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// WriteComparison prints Compare's ratios and each migpro policy's distance
// to the lower bound.
func WriteComparison(w io.Writer, results []*Result) error {
	cmp := Compare(results)
	if len(cmp) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nratios (above 1: the migpro policy is better)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "migpro policy vs other\tmakespan other/migpro\tmean JCT other/migpro")
	// The migpro side is marked when its figure is the simulator's (the
	// baselines are the simulator's models by name).
	starred := map[string]string{}
	for _, r := range results {
		starred[r.Policy] = r.starred()
	}
	for _, c := range cmp {
		fmt.Fprintf(tw, "%s vs %s\t%.2f×\t%.2f×\n", starred[c.Migpro], c.Other, c.Speedup, c.JCT)
	}
	for _, r := range results {
		if r.Policy == "migpro" || r.Policy == "migpro+predict" {
			fmt.Fprintf(tw, "%s vs lower bound\t%.2f× (%.0f%% above)\n", r.starred(), r.Ratio, 100*(r.Ratio-1))
		}
	}
	return tw.Flush()
}
