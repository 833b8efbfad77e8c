package eval

import (
	"fmt"
	"sort"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/trace"
	"github.com/migpro/migpro/predictor/tracegen"
)

// ShapeRow scores one of issue 29's shapes at one rate over many seeds.
type ShapeRow struct {
	Shape   string
	Hz      float64
	Seeds   int
	Growing bool
	Horizon bool
	// FalseMarks counts marked quiet runs; Missed growing runs not marked
	// before their OOM sample; Late growing runs marked under 5 s before
	// it; OverQuarter growing runs with a horizon not marked by a quarter of
	// their way to the OOM (mark t / OOM t over 0.25).
	FalseMarks, Missed, Late, OverQuarter int
	// MinLead and MedianLead are seconds from the mark to the OOM sample (a
	// miss counts 0); MaxWay and MedianWay the mark's share of the way from
	// the start to the OOM, growing runs with a horizon only.
	MinLead, MedianLead, MaxWay, MedianWay float64
}

// ShapeConfig is the agent's configuration for one shape: ForSeconds, the
// shape's capacity, and its horizon when the shape declares one.
func ShapeConfig(base predictor.Config, s tracegen.Shape) predictor.Config {
	cfg := base
	cfg.Capacity = tracegen.ShapeCapacity
	if s.WithHorizon {
		cfg.Horizon = s.Duration
	}
	return predictor.ForSeconds(cfg)
}

// shapeOOM is when tr first uses more than tracegen.ShapeCapacity, the
// instance the shapes are described on (tracegen.OOM measures against the
// larger tracegen.Capacity, which the shapes never reach).
func shapeOOM(tr trace.Trace) (float64, bool) {
	for _, row := range tr.Rows {
		if row.Used > tracegen.ShapeCapacity {
			return row.T, true
		}
	}
	return 0, false
}

// ScoreShapes runs every shape at both rates for seeds seeds.
func ScoreShapes(base predictor.Config, shapes []tracegen.Shape, seeds int) ([]ShapeRow, error) {
	var rows []ShapeRow
	for _, s := range shapes {
		cfg := ShapeConfig(base, s)
		for _, hz := range []float64{tracegen.ShimHz, tracegen.NVMLHz} {
			row := ShapeRow{Shape: s.Name, Hz: hz, Seeds: seeds, Growing: s.Growing, Horizon: s.WithHorizon}
			var leads, ways []float64
			for seed := range uint64(seeds) {
				tr := s.Generate(seed, hz)
				oom, grows := shapeOOM(tr)
				if grows != s.Growing {
					return nil, fmt.Errorf("%s seed %d at %g Hz: reaches capacity %v, want %v", s.Name, seed, hz, grows, s.Growing)
				}
				res, err := Score(tr, Options{Config: cfg})
				if err != nil {
					return nil, err
				}
				row.tally(res, oom, &leads, &ways)
			}
			row.summarize(leads, ways)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// tally counts one run of the row: a quiet run's false mark, or a growing
// run's mark against its OOM at oom (its lead and way go to leads and ways;
// a miss counts lead 0, way 1, and is late and, with a horizon, over a
// quarter too). It says whether the run breaks issue 29's bar.
func (r *ShapeRow) tally(res Result, oom float64, leads, ways *[]float64) bool {
	if !r.Growing {
		if res.FalseMark {
			r.FalseMarks++
		}
		return res.FalseMark
	}
	lead, way := 0.0, 1.0
	if res.Mark != nil && *res.Mark < oom {
		lead, way = oom-*res.Mark, *res.Mark/oom
	} else {
		r.Missed++
	}
	late, over := lead < 5, r.Horizon && way > 0.25
	if late {
		r.Late++
	}
	if over {
		r.OverQuarter++
	}
	*leads, *ways = append(*leads, lead), append(*ways, way)
	return lead == 0 || (late && r.Hz == tracegen.ShimHz) || over
}

// summarize sets the row's lead and way figures from its growing runs'.
func (r *ShapeRow) summarize(leads, ways []float64) {
	if len(leads) == 0 {
		return
	}
	sort.Float64s(leads)
	sort.Float64s(ways)
	r.MinLead, r.MedianLead = leads[0], leads[len(leads)/2]
	r.MaxWay, r.MedianWay = ways[len(ways)-1], ways[len(ways)/2]
}

// FormatShapes renders rows as a Markdown table.
func FormatShapes(rows []ShapeRow) string {
	s := "| shape | rate | false marks | missed | marked < 5 s ahead | min lead (s) | median lead (s) | horizon: over 25% | latest mark (% of way) |\n|---|---|---|---|---|---|---|---|---|\n"
	for _, r := range rows {
		if !r.Growing {
			s += fmt.Sprintf("| %s | %g Hz | %d/%d | – | – | – | – | – | – |\n", r.Shape, r.Hz, r.FalseMarks, r.Seeds)
			continue
		}
		over, way := "–", "–"
		if r.Horizon {
			over, way = fmt.Sprintf("%d/%d", r.OverQuarter, r.Seeds), fmt.Sprintf("%.0f", 100*r.MaxWay)
		}
		s += fmt.Sprintf("| %s | %g Hz | – | %d/%d | %d/%d | %.1f | %.1f | %s | %s |\n", r.Shape, r.Hz, r.Missed, r.Seeds,
			r.Late, r.Seeds, r.MinLead, r.MedianLead, over, way)
	}
	return s
}
