package replay

import (
	"fmt"
	"io"
	"strings"
)

// WriteFrontier prints the frontier: the pooled table (one line per point,
// baselines last), then one table per ratio with a row per configuration
// and a column per point. A point that is not the agent's own code is
// marked * (simulator only).
func WriteFrontier(w io.Writer, points []FrontierPoint) error {
	var b strings.Builder
	writePooled(&b, "pooled over every configuration", points, nil)
	writePooled(&b, "pooled over the generated streams on 2-8 GPUs of one model, where static sets the 7g bar and the rule acts",
		points, FrontierRow.StaticBar)
	tables := []struct {
		title string
		value func(FrontierRow) (float64, bool)
	}{
		{"mean JCT ÷ best dynamic baseline's (first-fit, nvidia-dra, hami)", func(r FrontierRow) (float64, bool) { return r.JCT, true }},
		{"4g p95 arrival-to-start ÷ best baseline's", func(r FrontierRow) (float64, bool) { v, ok := r.P95["4g"]; return v, ok }},
		{"7g p95 arrival-to-start ÷ best baseline's", func(r FrontierRow) (float64, bool) { v, ok := r.P95["7g"]; return v, ok }},
		{"7g p95 arrival-to-start ÷ static's", func(r FrontierRow) (float64, bool) { v, ok := r.P95Static["7g"]; return v, ok }},
	}
	for _, t := range tables {
		fmt.Fprintf(&b, "%s, per configuration:\n\n| configuration |", t.title)
		for _, p := range points {
			fmt.Fprintf(&b, " %s |", frontierLabel(p))
		}
		fmt.Fprintf(&b, "\n|---|%s\n", strings.Repeat("---|", len(points)))
		if len(points) == 0 {
			continue
		}
		for i, r := range points[0].Rows {
			fmt.Fprintf(&b, "| %s |", r.Config)
			for _, p := range points {
				if v, ok := t.value(p.Rows[i]); ok {
					fmt.Fprintf(&b, " %.3f |", v)
				} else {
					b.WriteString(" - |")
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePooled prints one pooled table: a line per point, over the rows
// keep keeps.
func writePooled(b *strings.Builder, title string, points []FrontierPoint, keep func(FrontierRow) bool) {
	if len(points) == 0 {
		return
	}
	fmt.Fprintf(b, "%s (%d rows; geometric mean of each row's ratio, every ratio of sums over the seeds, ± its jackknife standard error over the seeds; * simulator only):\n\n", title, points[0].PooledOver(keep).Rows)
	b.WriteString("| point | mean JCT ÷ best dynamic baseline | 4g p95 ÷ best baseline (÷ static) | 7g p95 ÷ best baseline (÷ static) | rows met: mean JCT / frag waits / p95 4g+7g / 7g alone | NVML steps per job |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, p := range points {
		q := p.PooledOver(keep)
		if q.JCTErr > 0 {
			fmt.Fprintf(b, "| %s | %.3f ± %.3f |", frontierLabel(p), q.JCT, q.JCTErr)
		} else {
			fmt.Fprintf(b, "| %s | %.3f |", frontierLabel(p), q.JCT)
		}
		for _, size := range TargetSizes {
			fmt.Fprintf(b, " %s (%s) |", ratioCell(q.P95[size]), ratioCell(q.P95Static[size]))
		}
		if p.Baseline {
			b.WriteString(" - | - |\n")
			continue
		}
		fmt.Fprintf(b, " %d / %d / %d / %d of %d | %.2f (nvidia-dra %.2f) |\n", q.JCTMet, q.FragMet, q.P95Met, q.P95Met7g, q.Rows, q.StepsPerJob, q.DRASteps)
	}
	b.WriteString("\n")
}

// frontierLabel is the point's label as the tables show it: "reserve after
// L" for a setting, the baseline's name, and * when simulator only.
func frontierLabel(p FrontierPoint) string {
	label := p.Label
	if !p.Baseline {
		who := "migpro"
		if p.Strategy.Exact {
			who = "migpro/exact (pods)"
		}
		label = who + ", reserve after " + label
		if p.Label == "never" {
			label = who + ", never reserve (default)"
		}
	}
	return star(label, p.SimulatorOnly())
}

func ratioCell(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}
