package eval

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/tracegen"
)

// sealed4Seeds is how many seeds of each shape and rate TestSealed4Shapes
// runs: seeds 0 to 99 of each shape (tracegen.Sealed4Seed0 places them).
const sealed4Seeds = 100

// sealed4Gaps are the rows (shape@rate) of the fourth sealed set that miss
// issue 29's bar with the predictor this file was written against (main at
// the sealer branch's third round, 4bca60f; the predictor unchanged since
// badc6a9), as docs/predictor-sealed4.md reports them. Every other row is held to the bar with no tolerance, and a listed
// row that meets it fails the test too, so the list cannot outlive the gap.
// Only the lead updates it, from a run on the final predictor.
var sealed4Gaps = map[string]bool{
	"s4-pipeline-stages@10": true, "s4-pipeline-stages@1": true,
	"s4-embedding-shards@10": true, "s4-embedding-shards@1": true,
	"s4-sweep-trials@10":     true,
	"s4-rl-alternating@10":   true,
	"s4-diffusion-decode@10": true,
	"s4-video-streams@10":    true, "s4-video-streams@1": true,
	"s4-expert-cache@10": true, "s4-expert-cache@1": true,
	"s4-request-type-leak@10": true, "s4-request-type-leak@1": true,
	"s4-index-ingest@10": true, "s4-index-ingest@1": true,
	"s4-fragmentation-creep@10": true, "s4-fragmentation-creep@1": true,
	"s4-replay-buffer-horizon@10": true, "s4-replay-buffer-horizon@1": true,
	"s4-profiler-buffer-horizon@10": true, "s4-profiler-buffer-horizon@1": true,
}

// sealed4Row scores one shape of the fourth sealed set at one rate.
type sealed4Row struct {
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

// scoreSealed4 runs every shape at both rates for seeds seeds, each run on
// its own instance with the agent's settings (predictor.ForSeconds) and,
// when the run declares one, its horizon.
func scoreSealed4(shapes []tracegen.Sealed4Shape, seeds int) ([]sealed4Row, error) {
	var rows []sealed4Row
	for _, s := range shapes {
		for _, hz := range []float64{tracegen.ShimHz, tracegen.NVMLHz} {
			row := sealed4Row{Shape: s.Name, Hz: hz, Seeds: seeds, Growing: s.Growing, Horizon: s.WithHorizon, Failing: map[uint64]int{}}
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

// sealed4Miss says how a row misses issue 29's bar, "" when it meets it:
// no false mark on a quiet shape (either rate); every growing run marked
// before its OOM, at least 5 s ahead at 10 Hz; with a horizon, marked by a
// quarter of its way.
func sealed4Miss(r sealed4Row) string {
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

// formatSealed4 renders rows as the Markdown table of
// docs/predictor-sealed4.md.
func formatSealed4(rows []sealed4Row) string {
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

// TestSealed4Shapes holds the predictor, with the agent's settings, to
// issue 29's bar on the fourth sealed held-out set (tracegen.Sealed4Shapes),
// written apart from the predictor and its tuning: 0 false marks on the
// quiet shapes at 10 Hz and 1 Hz; every growing run marked before its OOM,
// at least 5 s ahead at 10 Hz; with a horizon, marked by 25% of its way to
// the OOM. Rows in sealed4Gaps are reported, not held, and fail when they
// meet the bar. -v prints the table of docs/predictor-sealed4.md.
func TestSealed4Shapes(t *testing.T) {
	rows, err := scoreSealed4(tracegen.Sealed4Shapes(), sealed4Seeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", formatSealed4(rows))
	var gaps []string
	for _, r := range rows {
		key := fmt.Sprintf("%s@%g", r.Shape, r.Hz)
		miss := sealed4Miss(r)
		switch {
		case miss != "" && !sealed4Gaps[key]:
			t.Errorf("%s at %g Hz: %s", r.Shape, r.Hz, miss)
		case miss == "" && sealed4Gaps[key]:
			t.Errorf("%s at %g Hz meets the bar: drop it from sealed4Gaps and from docs/predictor-sealed4.md", r.Shape, r.Hz)
		}
		if miss != "" {
			gaps = append(gaps, fmt.Sprintf("%q: true,", key))
		}
	}
	t.Logf("rows that miss the bar (sealed4Gaps): %d of %d\n%s", len(gaps), len(rows), strings.Join(gaps, " "))
}
