//go:build tuning

package eval

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/tracegen"
)

// The per-set totals of docs/predictor-results.md ("Where it stands") over
// every tuning set, in one table, for measuring a change before and after:
//
//	go test -tags tuning -count=1 -v -run TestTuningTotals ./predictor/eval
//	go test -tags tuning -count=1 -v -run TestTuningTotals ./predictor/eval -args -seed-offset=47000000
//
// -seed-offset renders every shape from seeds nobody tuned on (seed0 +
// offset + i); -rows writes every row's figures to a file (each failing
// run's seed, mark and reason), for diffing two runs. On the tuning seeds
// (no offset) it holds every set to the totals of the table
// (tallyStands): a change that moves any figure of any set, either way,
// fails it until the table and docs/predictor-results.md say so. It is behind the
// build tag "tuning" because it scores every set again (about two minutes
// on two cores), which the set tests already do one by one.

var (
	seedOffset = flag.Uint64("seed-offset", 0, "added to every seed")
	rowsFile   = flag.String("rows", "", "write every row's figures here")
)

// tallySet is one line of the totals table: shapes scored together.
type tallySet struct {
	name   string
	shapes []sealedShape
}

// shapeSet adapts issue 29's shapes (tracegen.Shape) to the sealed scorer.
func shapeSet(shapes []tracegen.Shape) []sealedShape {
	var out []sealedShape
	for _, s := range shapes {
		out = append(out, sealedShape{Name: s.Name, Growing: s.Growing, WithHorizon: s.WithHorizon,
			Generate: func(seed uint64, hz float64) tracegen.SealedRun {
				run := tracegen.SealedRun{Trace: s.Generate(seed, hz), Capacity: tracegen.ShapeCapacity}
				if s.WithHorizon {
					run.Horizon = s.Duration
				}
				return run
			}})
	}
	return out
}

// tallySets are the tuning sets, as docs/predictor-results.md lists them.
func tallySets() []tallySet {
	var s2quiet []tracegen.SealedShape
	for _, s := range tracegen.Sealed2Shapes() {
		if !s.Growing && !s.WithHorizon {
			s.WithHorizon, s.Name = true, s.Name+"-with-horizon"
			s2quiet = append(s2quiet, s)
		}
	}
	return []tallySet{
		{"tuned", shapeSet(tracegen.TunedShapes())},
		{"first held-out (-ho)", shapeSet(tracegen.HeldOutShapes())},
		{"sealed v1", shapeSet(tracegen.SealedShapes())},
		{"sealed v2", sealedSet(tracegen.Sealed2Shapes())},
		{"sealed v3", sealedSet(tracegen.Sealed3Shapes())},
		{"sealed v4", sealedSet(tracegen.Sealed4Shapes())},
		{"sealed v5", sealedSet(tracegen.Sealed5Shapes())},
		{"sealed v6", sealedSet(tracegen.Sealed6Shapes())},
		{"sealed v7", sealedSet(tracegen.Sealed7Shapes())},
		{"sealed v8", sealedSet(tracegen.Sealed8Shapes())},
		{"sealed v9", sealedSet(tracegen.Sealed9Shapes())},
		{"tuned quiet, given a horizon", shapeSet(quietWithHorizon(tracegen.TunedShapes()))},
		{"-ho, v1, v2 quiet, given a horizon", append(shapeSet(quietWithHorizon(tracegen.HeldOutShapes(), tracegen.SealedShapes())), sealedSet(s2quiet)...)},
	}
}

// tallyStands is "Where it stands" in docs/predictor-results.md: each
// set's totals on the tuning seeds, as this predictor scores them (round
// eight, docs/predictor-round8.md; set seven, tuning data since it judged
// round six; set eight, since it judged round seven; set nine, since it
// judged round eight). Rows missing the bar
// are not held here: the set tests hold each row.
var tallyStands = map[string]tallyLine{
	"tuned":                              {missed1: 8, quarter: 205},
	"first held-out (-ho)":               {quiet: 6, missed10: 7, missed1: 27, late: 17, quarter: 209},
	"sealed v1":                          {quiet: 32, missed10: 3, missed1: 8, late: 12},
	"sealed v2":                          {quiet: 26, late: 1, quarter: 38},
	"sealed v3":                          {quiet: 148, quietH: 85, missed10: 1, missed1: 12, late: 5, quarter: 14},
	"sealed v4":                          {quiet: 77, quietH: 123, missed10: 31, missed1: 59, late: 50, quarter: 124},
	"sealed v5":                          {quiet: 148, quietH: 114, missed10: 14, missed1: 22, late: 54, quarter: 184},
	"sealed v6":                          {quiet: 17, quietH: 75, missed10: 24, missed1: 38, late: 50, quarter: 203},
	"sealed v7":                          {quiet: 195, quietH: 333, missed10: 69, missed1: 88, late: 93, quarter: 239},
	"sealed v8":                          {quietH: 33, missed10: 41, missed1: 94, late: 60, quarter: 183},
	"sealed v9":                          {quiet: 9, quietH: 189, missed10: 104, missed1: 143, late: 107, quarter: 149},
	"tuned quiet, given a horizon":       {quietH: 11},
	"-ho, v1, v2 quiet, given a horizon": {quietH: 247},
}

// moved says which of l's figures differ from was's, "" when none does.
func (l tallyLine) moved(was tallyLine) string {
	var w []string
	for _, f := range []struct {
		name     string
		now, was int
	}{
		{"quiet runs marked without a horizon", l.quiet, was.quiet},
		{"quiet runs marked with a horizon", l.quietH, was.quietH},
		{"growing runs missed at 10 Hz", l.missed10, was.missed10},
		{"growing runs missed at 1 Hz", l.missed1, was.missed1},
		{"marked under 5 s ahead at 10 Hz", l.late, was.late},
		{"past a quarter of the way", l.quarter, was.quarter},
	} {
		if f.now != f.was {
			w = append(w, fmt.Sprintf("%s %d, was %d", f.name, f.now, f.was))
		}
	}
	return strings.Join(w, "; ")
}

// tallyLine is one set's totals.
type tallyLine struct {
	quiet, quietH, missed10, missed1, late, quarter, missing, rows, skipped int
}

func (l *tallyLine) add(o tallyLine) {
	l.quiet += o.quiet
	l.quietH += o.quietH
	l.missed10 += o.missed10
	l.missed1 += o.missed1
	l.late += o.late
	l.quarter += o.quarter
	l.missing += o.missing
	l.rows += o.rows
	l.skipped += o.skipped
}

// tallyShapes scores shapes at both rates, seeds from off, and returns the
// totals and each row's line for the rows file. A run whose OOM does not
// match its shape (possible on fresh seeds) is skipped and counted.
func tallyShapes(t *testing.T, shapes []sealedShape, off uint64) (tallyLine, []string) {
	var l tallyLine
	var lines []string
	for _, s := range shapes {
		for _, hz := range []float64{tracegen.ShimHz, tracegen.NVMLHz} {
			row := ShapeRow{Shape: s.Name, Hz: hz, Seeds: shapeSeeds, Growing: s.Growing, Horizon: s.WithHorizon}
			var leads, ways []float64
			var marks []string
			srcs := map[string]int{}
			for seed := range uint64(shapeSeeds) {
				run := s.Generate(seed+off, hz)
				res, err := Score(run.Trace, Options{Config: predictor.ForSeconds(predictor.Config{Capacity: run.Capacity, Horizon: run.Horizon})})
				if err != nil {
					t.Fatal(err)
				}
				if (res.OOM != nil) != s.Growing {
					l.skipped++
					continue
				}
				oom := 0.0
				if res.OOM != nil {
					oom = *res.OOM
				}
				if res.Decision != nil {
					srcs[string(res.Decision.Reason)]++
				}
				if row.tally(res, oom, &leads, &ways) {
					m := "-"
					if res.Decision != nil {
						m = fmt.Sprintf("%.1f:%s", res.Decision.At, res.Decision.Reason)
					}
					marks = append(marks, fmt.Sprintf("%d@%s", seed, m))

				}
			}
			row.summarize(leads, ways)
			l.rows++
			if !s.Growing {
				if s.WithHorizon {
					l.quietH += row.FalseMarks
				} else {
					l.quiet += row.FalseMarks
				}
			} else {
				if hz == tracegen.ShimHz {
					l.missed10 += row.Missed
					l.late += row.Late
				} else {
					l.missed1 += row.Missed
				}
				l.quarter += row.OverQuarter
			}
			if shapeMiss(row) != "" {
				l.missing++
			}
			lines = append(lines, fmt.Sprintf("%s@%g fm=%d miss=%d late=%d q=%d minlead=%.1f medlead=%.1f maxway=%.2f src=%v bad=%s",
				s.Name, hz, row.FalseMarks, row.Missed, row.Late, row.OverQuarter, row.MinLead, row.MedianLead, row.MaxWay, srcs, strings.Join(marks, ",")))
		}
	}
	return l, lines
}

// TestTuningTotals prints the per-set totals over every tuning set and,
// on the tuning seeds, holds each set to tallyStands.
func TestTuningTotals(t *testing.T) {
	var b strings.Builder
	b.WriteString("| set | quiet (no horizon) | quiet (horizon) | missed 10 / 1 Hz | late at 10 Hz | quarter | rows missing the bar |\n|---|---|---|---|---|---|---|\n")
	var all tallyLine
	var lines []string
	for _, set := range tallySets() {
		l, ls := tallyShapes(t, set.shapes, *seedOffset)
		all.add(l)
		lines = append(lines, ls...)
		fmt.Fprintf(&b, "| %s | %d | %d | %d/%d | %d | %d | %d/%d |\n", set.name, l.quiet, l.quietH, l.missed10, l.missed1, l.late, l.quarter, l.missing, l.rows)
		if *seedOffset != 0 {
			continue
		}
		was, ok := tallyStands[set.name]
		switch {
		case !ok:
			t.Errorf("%s: no figures in tallyStands", set.name)
		case l.moved(was) != "":
			t.Errorf("%s: %s: update tallyStands and docs/predictor-results.md", set.name, l.moved(was))
		case l.skipped > 0:
			t.Errorf("%s: %d runs do not run out as their shape says", set.name, l.skipped)
		}
	}
	fmt.Fprintf(&b, "| **all** | %d | %d | %d/%d | %d | %d | %d/%d |\n", all.quiet, all.quietH, all.missed10, all.missed1, all.late, all.quarter, all.missing, all.rows)
	t.Logf("seed offset %d, %d runs skipped (OOM not as the shape says)\n%s", *seedOffset, all.skipped, b.String())
	if *rowsFile != "" {
		sort.Strings(lines)
		if err := os.WriteFile(*rowsFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
