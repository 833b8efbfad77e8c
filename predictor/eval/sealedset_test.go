package eval

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/trace"
	"github.com/migpro/migpro/predictor/tracegen"
)

// The scoring of the sealed held-out sets 2 to 4, which their tests share.

// sealedShape is one shape of a sealed set (tracegen.Sealed2Shapes,
// Sealed3Shapes, Sealed4Shapes) as the scorer sees it. Each set keeps its
// own generator types, written apart; only the scoring is shared.
type sealedShape struct {
	Name                 string
	Growing, WithHorizon bool
	Generate             func(seed uint64, hz float64) sealedRun
}

// sealedRun is one generated run: an NVML-only trace, its instance's
// capacity in bytes, and its declared horizon in seconds (0: none).
type sealedRun struct {
	Trace    trace.Trace
	Capacity uint64
	Horizon  float64
}

// sealedRow scores one shape of a sealed set at one rate.
type sealedRow struct {
	Shape            string
	Hz               float64
	Seeds            int
	Growing, Horizon bool
	// FalseMarks counts marked quiet runs; Missed growing runs not marked
	// before their OOM reading; Late growing runs marked under 5 s before
	// it (a miss is late too); OverQuarter growing runs with a horizon not
	// marked by a quarter of their way to the OOM (a miss is over too).
	FalseMarks, Missed, Late, OverQuarter int
	// Failing counts the runs that break the bar at this rate, by instance
	// size in GB.
	Failing map[uint64]int
	// MinLead and MedianLead are seconds from the mark to the OOM reading
	// (a miss counts 0); MaxWay and MedianWay the mark's share of the way
	// to the OOM (a miss counts 1), growing runs with a horizon only.
	MinLead, MedianLead, MaxWay, MedianWay float64
}

// scoreSealed runs every shape at both rates for seeds seeds, each run on
// its own instance with the agent's settings (predictor.ForSeconds) and,
// when the run declares one, its horizon.
func scoreSealed(shapes []sealedShape, seeds int) ([]sealedRow, error) {
	var rows []sealedRow
	for _, s := range shapes {
		for _, hz := range []float64{tracegen.ShimHz, tracegen.NVMLHz} {
			row := sealedRow{Shape: s.Name, Hz: hz, Seeds: seeds, Growing: s.Growing, Horizon: s.WithHorizon, Failing: map[uint64]int{}}
			var leads, ways []float64
			for seed := range uint64(seeds) {
				run := s.Generate(seed, hz)
				res, err := Score(run.Trace, Options{Config: predictor.ForSeconds(predictor.Config{Capacity: run.Capacity, Horizon: run.Horizon})})
				if err != nil {
					return nil, fmt.Errorf("%s seed %d at %g Hz: %w", s.Name, seed, hz, err)
				}
				if (res.OOM != nil) != s.Growing {
					return nil, fmt.Errorf("%s seed %d at %g Hz: runs out of its %d GB instance %v, want %v", s.Name, seed, hz, run.Capacity/1e9, res.OOM != nil, s.Growing)
				}
				gb := run.Capacity / 1e9
				if !s.Growing {
					if res.FalseMark {
						row.FalseMarks++
						row.Failing[gb]++
					}
					continue
				}
				lead, way := 0.0, 1.0
				if res.Mark != nil && *res.Mark < *res.OOM {
					lead, way = *res.OOM-*res.Mark, *res.Mark / *res.OOM
				} else {
					row.Missed++
				}
				late, over := lead < 5, s.WithHorizon && way > 0.25
				if late {
					row.Late++
				}
				if over {
					row.OverQuarter++
				}
				if lead == 0 || (late && hz == tracegen.ShimHz) || over {
					row.Failing[gb]++
				}
				leads, ways = append(leads, lead), append(ways, way)
			}
			if len(leads) > 0 {
				sort.Float64s(leads)
				sort.Float64s(ways)
				row.MinLead, row.MedianLead = leads[0], leads[len(leads)/2]
				row.MaxWay, row.MedianWay = ways[len(ways)-1], ways[len(ways)/2]
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// sealedMiss says how a row misses issue 29's bar, "" when it meets it:
// no false mark on a quiet shape (either rate); every growing run marked
// before its OOM, at least 5 s ahead at 10 Hz; with a horizon, marked by a
// quarter of its way.
func sealedMiss(r sealedRow) string {
	switch {
	case r.FalseMarks > 0:
		return fmt.Sprintf("%d/%d quiet runs marked", r.FalseMarks, r.Seeds)
	case r.Missed > 0:
		return fmt.Sprintf("%d/%d growing runs not marked before the OOM", r.Missed, r.Seeds)
	case r.Hz == tracegen.ShimHz && r.Late > 0:
		return fmt.Sprintf("%d/%d marked under 5 s before the OOM (min %.1f s)", r.Late, r.Seeds, r.MinLead)
	case r.OverQuarter > 0:
		return fmt.Sprintf("%d/%d not marked by 25%% of the way to the OOM (latest %.0f%%)", r.OverQuarter, r.Seeds, 100*r.MaxWay)
	}
	return ""
}

// formatSealed renders rows as the Markdown table of the set's page
// (docs/predictor-sealed2.md, -sealed3.md, -sealed4.md).
func formatSealed(rows []sealedRow) string {
	var b strings.Builder
	b.WriteString("| shape | rate | false marks | missed | marked < 5 s ahead | min lead (s) | median lead (s) | horizon: over 25% | latest mark (% of way) | failing runs by instance (5/10/20/40 GB) |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		by := fmt.Sprintf("%d/%d/%d/%d", r.Failing[5], r.Failing[10], r.Failing[20], r.Failing[40])
		if !r.Growing {
			fmt.Fprintf(&b, "| %s | %g Hz | %d/%d | – | – | – | – | – | – | %s |\n", r.Shape, r.Hz, r.FalseMarks, r.Seeds, by)
			continue
		}
		over, way := "–", "–"
		if r.Horizon {
			over, way = fmt.Sprintf("%d/%d", r.OverQuarter, r.Seeds), fmt.Sprintf("%.0f", 100*r.MaxWay)
		}
		fmt.Fprintf(&b, "| %s | %g Hz | – | %d/%d | %d/%d | %.1f | %.1f | %s | %s | %s |\n", r.Shape, r.Hz, r.Missed, r.Seeds,
			r.Late, r.Seeds, r.MinLead, r.MedianLead, over, way, by)
	}
	return b.String()
}

// checkSealed scores a sealed set and holds it to issue 29's bar: 0 false
// marks on the quiet shapes at 10 Hz and 1 Hz; every growing run marked
// before its OOM, at least 5 s ahead at 10 Hz; with a horizon, marked by
// 25% of its way to the OOM. Rows in gaps (named gapsName) are reported,
// not held, and fail when they meet the bar, so a list cannot outlive its
// gap. It logs the table of the set's page (doc) and the rows that miss.
func checkSealed(t *testing.T, shapes []sealedShape, seeds int, gaps map[string]bool, gapsName, doc string) {
	t.Helper()
	rows, err := scoreSealed(shapes, seeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", formatSealed(rows))
	var missing []string
	for _, r := range rows {
		key := fmt.Sprintf("%s@%g", r.Shape, r.Hz)
		miss := sealedMiss(r)
		switch {
		case miss != "" && !gaps[key]:
			t.Errorf("%s at %g Hz: %s", r.Shape, r.Hz, miss)
		case miss == "" && gaps[key]:
			t.Errorf("%s at %g Hz meets the bar: drop it from %s and from %s", r.Shape, r.Hz, gapsName, doc)
		}
		if miss != "" {
			missing = append(missing, fmt.Sprintf("%q: true,", key))
		}
	}
	t.Logf("rows that miss the bar (%s): %d of %d\n%s", gapsName, len(missing), len(rows), strings.Join(missing, " "))
}
