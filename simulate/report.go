package simulate

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints one row per policy.
func WriteTable(w io.Writer, results []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tmakespan s\tjobs/s\tmean JCT s\tp95 JCT s\tmem util\treconfigs\trestarts (marked)\tlost s\t÷ lower bound\t\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.0f\t%.4f\t%.0f\t%.0f\t%.1f%%\t%d\t%d (%d)\t%.0f\t%.2f\t\t%s\n",
			r.Policy, r.Makespan, r.Throughput, r.MeanJCT, r.P95JCT, 100*r.MemUtil, r.Reconfigs,
			r.Restarts, r.Marks, r.LostWork, r.Ratio, r.Detail)
	}
	if len(results) > 0 {
		fmt.Fprintf(tw, "lower bound\t%.0f\t\t\t\t\t\t\t\t1.00\t\t%s\n", results[0].LowerBound, "slice-seconds over the cluster's slices, arrivals respected")
	}
	return tw.Flush()
}

// Comparison is one migpro policy against one other policy.
type Comparison struct {
	Migpro, Other string
	// Speedup is the other's makespan over migpro's (above 1: migpro is
	// faster); JCT the other's mean completion time over migpro's.
	Speedup, JCT float64
}

// Compare sets each migpro policy present (migpro, migpro+predict) against
// every baseline present (sequential, static, first-fit).
func Compare(results []*Result) []Comparison {
	var out []Comparison
	for _, m := range results {
		if m.Policy != "migpro" && m.Policy != "migpro+predict" {
			continue
		}
		for _, o := range results {
			if o == m || (o.Policy != "sequential" && o.Policy != "first-fit" && !isStatic(o.Policy) && o.Policy != "migpro") {
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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nratios (above 1: the migpro policy is better)\t\t")
	fmt.Fprintln(tw, "migpro policy vs other\tmakespan other/migpro\tmean JCT other/migpro")
	for _, c := range cmp {
		fmt.Fprintf(tw, "%s vs %s\t%.2f×\t%.2f×\n", c.Migpro, c.Other, c.Speedup, c.JCT)
	}
	for _, r := range results {
		if r.Policy == "migpro" || r.Policy == "migpro+predict" {
			fmt.Fprintf(tw, "%s vs lower bound\t%.2f× (%.0f%% above)\t\n", r.Policy, r.Ratio, 100*(r.Ratio-1))
		}
	}
	return tw.Flush()
}
