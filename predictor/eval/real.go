package eval

import (
	"fmt"
	"math"
	"sort"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/tracegen"
)

// RealRow scores one framework-shaped family at one sampling rate over many
// seeds: false marks on quiet families, lead in seconds on growing ones, and
// the 10% peak error.
type RealRow struct {
	Family    string
	Hz        float64
	Algorithm predictor.Algorithm
	Seeds     int
	Growing   bool
	// FalseMarks counts marked quiet runs; Missed counts growing runs not
	// marked before their OOM sample.
	FalseMarks, Missed int
	// MinLead and MedianLead are seconds from the mark to the OOM sample,
	// over the growing runs (a missed run counts as 0).
	MinLead, MedianLead float64
	// MeanPeakErr is |forecast − peak| / peak in percent, the forecast made
	// for the run's last t after its first tenth.
	MeanPeakErr float64
}

// ScoreReal runs every family at both rates for seeds seeds.
func ScoreReal(cfg predictor.Config, fams []tracegen.RealFamily, seeds int) ([]RealRow, error) {
	var rows []RealRow
	for _, fam := range fams {
		for _, hz := range []float64{tracegen.ShimHz, tracegen.NVMLHz} {
			row := RealRow{Family: fam.Name, Hz: hz, Algorithm: cfg.Algorithm, Seeds: seeds, Growing: fam.Growing}
			if row.Algorithm == "" {
				row.Algorithm = predictor.Migpro
			}
			var leads []float64
			var errSum float64
			var errN int
			for seed := range uint64(seeds) {
				tr := fam.Generate(seed, hz)
				oom, grows := tracegen.OOM(tr)
				if grows != fam.Growing {
					return nil, fmt.Errorf("%s seed %d at %g Hz: reaches capacity %v, want %v", fam.Name, seed, hz, grows, fam.Growing)
				}
				res, err := Score(tr, Options{Config: cfg})
				if err != nil {
					return nil, err
				}
				if res.FalseMark {
					row.FalseMarks++
				}
				if grows {
					lead := 0.0
					if res.Mark != nil && *res.Mark < oom {
						lead = oom - *res.Mark
					} else {
						row.Missed++
					}
					leads = append(leads, lead)
				}
				if res.PeakErrorAt10Pct != nil {
					errSum += *res.PeakErrorAt10Pct
					errN++
				}
			}
			if len(leads) > 0 {
				sort.Float64s(leads)
				row.MinLead, row.MedianLead = leads[0], leads[len(leads)/2]
			}
			if errN > 0 {
				row.MeanPeakErr = errSum / float64(errN)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// FormatReal renders rows as a Markdown table.
func FormatReal(rows []RealRow) string {
	s := "| family | rate | algorithm | false marks | missed | min lead (s) | median lead (s) | peak error (%) |\n|---|---|---|---|---|---|---|---|\n"
	for _, r := range rows {
		lead := "–"
		med := "–"
		if r.MinLead > 0 || r.MedianLead > 0 || r.Missed > 0 {
			lead, med = fmt.Sprintf("%.1f", r.MinLead), fmt.Sprintf("%.1f", r.MedianLead)
		}
		s += fmt.Sprintf("| %s | %g Hz | %s | %d/%d | %d | %s | %s | %.1f |\n", r.Family, r.Hz, r.Algorithm,
			r.FalseMarks, r.Seeds, r.Missed, lead, med, round1(r.MeanPeakErr))
	}
	return s
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
