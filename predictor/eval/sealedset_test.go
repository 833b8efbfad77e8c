package eval

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/tracegen"
)

// The scoring of the sealed held-out sets 2 and later, which their tests share.

// sealedShape is one shape as the scorer sees it: a shape of a sealed set
// (tracegen.SealedShape, through sealedSet) or one of issue 29's shapes
// rendered as a sealed run (shapeSet).
type sealedShape struct {
	Name                 string
	Growing, WithHorizon bool
	Generate             func(seed uint64, hz float64) tracegen.SealedRun
}

// sealedSet gives the scorer the shapes of a sealed set.
func sealedSet(shapes []tracegen.SealedShape) []sealedShape {
	out := make([]sealedShape, 0, len(shapes))
	for _, s := range shapes {
		out = append(out, sealedShape{Name: s.Name, Growing: s.Growing, WithHorizon: s.WithHorizon, Generate: s.Generate})
	}
	return out
}

// sealedRow scores one shape of a sealed set at one rate, as ShapeRow does
// issue 29's shapes, and counts the runs that break the bar by instance.
type sealedRow struct {
	ShapeRow
	// Failing counts the runs that break the bar at this rate, by instance
	// size in GB.
	Failing map[uint64]int
}

// scoreSealed runs every shape at both rates for seeds seeds, each run on
// its own instance with the agent's settings (predictor.ForSeconds) and,
// when the run declares one, its horizon.
func scoreSealed(shapes []sealedShape, seeds int) ([]sealedRow, error) {
	var rows []sealedRow
	for _, s := range shapes {
		for _, hz := range []float64{tracegen.ShimHz, tracegen.NVMLHz} {
			row := sealedRow{ShapeRow: ShapeRow{Shape: s.Name, Hz: hz, Seeds: seeds, Growing: s.Growing, Horizon: s.WithHorizon}, Failing: map[uint64]int{}}
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
				oom := 0.0
				if res.OOM != nil {
					oom = *res.OOM
				}
				if row.tally(res, oom, &leads, &ways) {
					row.Failing[run.Capacity/1e9]++
				}
			}
			row.summarize(leads, ways)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// formatSealed renders rows as the Markdown table of the set's page
// (docs/predictor-sealed2.md and later). The last column counts failing
// runs by instance: 5, 10, 20 and 40 GB, and any other size a run failed on.
func formatSealed(rows []sealedRow) string {
	sizes := []uint64{5, 10, 20, 40}
	for _, r := range rows {
		for gb := range r.Failing {
			if !slices.Contains(sizes, gb) {
				sizes = append(sizes, gb)
			}
		}
	}
	slices.Sort(sizes)
	names := make([]string, len(sizes))
	for i, gb := range sizes {
		names[i] = strconv.FormatUint(gb, 10)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| shape | rate | false marks | missed | marked < 5 s ahead | min lead (s) | median lead (s) | horizon: over 25%% | latest mark (%% of way) | failing runs by instance (%s GB) |\n"+
		"|---|---|---|---|---|---|---|---|---|---|\n", strings.Join(names, "/"))
	for _, r := range rows {
		counts := make([]string, len(sizes))
		for i, gb := range sizes {
			counts[i] = strconv.Itoa(r.Failing[gb])
		}
		by := strings.Join(counts, "/")
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
		miss := shapeMiss(r.ShapeRow)
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
