package eval

import (
	"fmt"
	"math"

	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/trace"
)

// Result is one trace's score. The JSON keys are migctl predict's interface.
type Result struct {
	Trace string `json:"trace"`
	// Mark and OOM are t values; nil when there is no mark or no OOM.
	Mark *float64 `json:"mark"`
	OOM  *float64 `json:"oom"`
	// LeadSamples is how many samples the mark came before the OOM sample;
	// LeadPct is that share of the samples up to and including the OOM. Both
	// are nil unless the trace has both a mark and an OOM; a mark after the
	// OOM sample cannot happen, since the run stops there.
	LeadSamples *int     `json:"leadSamples"`
	LeadPct     *float64 `json:"leadPct"`
	// PeakErrorAt10Pct is |forecast − peak| / peak in percent, the forecast
	// being made for the trace's last t after its first tenth of samples.
	PeakErrorAt10Pct *float64 `json:"peakErrorAt10pct"`
	FalseMark        bool     `json:"falseMark"`
	// Profile is the recommended readmission profile, nil without profiles
	// or without a mark.
	Profile *string `json:"profile"`

	// Decision is the full mark, for text output; not part of the JSON.
	Decision *predictor.Mark `json:"-"`
}

// Options say how to score.
type Options struct {
	// Config is the predictor configuration; Horizon zero means unknown.
	// The baseline cannot run without a horizon, so it is then given each
	// trace's last t: an oracle migpro never gets.
	Config predictor.Config
}

// Score runs one trace. Samples are fed up to and including the first one
// over capacity: a real run dies there, so nothing after it can be seen.
func Score(tr trace.Trace, opt Options) (Result, error) {
	res := Result{Trace: tr.Name}
	if len(tr.Rows) == 0 {
		return res, fmt.Errorf("%s: empty trace", tr.Name)
	}
	cfg := opt.Config
	last := tr.Rows[len(tr.Rows)-1].T
	if cfg.Algorithm == predictor.Baseline && cfg.Horizon == 0 {
		cfg.Horizon = last
	}
	p, err := predictor.New(cfg)
	if err != nil {
		return res, fmt.Errorf("%s: %w", tr.Name, err)
	}
	oomIdx := -1
	var peak uint64
	for i, r := range tr.Rows {
		peak = max(peak, r.Used)
		if oomIdx < 0 && r.Used > cfg.Capacity {
			oomIdx = i
		}
	}
	tenth := int(math.Ceil(float64(len(tr.Rows)) / 10))
	markIdx := -1
	for i, r := range tr.Rows {
		if oomIdx >= 0 && i > oomIdx {
			break
		}
		if d, ok := p.Observe(r.Sample()); ok {
			markIdx = i
			res.Decision = &d
		}
	}
	if f, ok := forecastAfter(tr, cfg, tenth, last); ok && peak > 0 {
		e := 100 * math.Abs(f-float64(peak)) / float64(peak)
		res.PeakErrorAt10Pct = &e
	}
	if oomIdx >= 0 {
		t := tr.Rows[oomIdx].T
		res.OOM = &t
	}
	if markIdx >= 0 {
		t := tr.Rows[markIdx].T
		res.Mark = &t
		res.FalseMark = oomIdx < 0
		if res.Decision.Profile != "" {
			name := res.Decision.Profile
			res.Profile = &name
		}
	}
	if markIdx >= 0 && oomIdx >= 0 {
		lead := oomIdx - markIdx
		pct := 100 * float64(lead) / float64(oomIdx+1)
		res.LeadSamples, res.LeadPct = &lead, &pct
	}
	return res, nil
}

// forecastAfter is the peak forecast for t=at after the first n samples. It
// uses its own predictor so that the scoring run above stays a plain replay.
func forecastAfter(tr trace.Trace, cfg predictor.Config, n int, at float64) (float64, bool) {
	p, err := predictor.New(cfg)
	if err != nil {
		return 0, false
	}
	for _, r := range tr.Rows[:min(n, len(tr.Rows))] {
		p.Observe(r.Sample())
	}
	return p.Forecast(at)
}

// Summary aggregates results over growing traces (those with an OOM) and the
// others.
type Summary struct {
	Growing      int     `json:"growing"`
	MarkedInTime int     `json:"markedInTime"` // mark strictly before the OOM sample
	MeanLead     float64 `json:"meanLeadSamples"`
	MeanLeadPct  float64 `json:"meanLeadPct"`
	NonGrowing   int     `json:"nonGrowing"`
	FalseMarks   int     `json:"falseMarks"`
	// MeanPeakErr averages the 10% peak error over every trace with a
	// forecast; MeanPeakErrGrowing over growing traces only, the workloads
	// that do run out of memory.
	MeanPeakErr        float64 `json:"meanPeakErrorAt10pct"`
	MeanPeakErrGrowing float64 `json:"meanPeakErrorAt10pctGrowing"`
	// PeakErrN and PeakErrGrowingN count the traces behind each mean; a
	// trace too short to fit after a tenth has no error.
	PeakErrN        int `json:"peakErrorTraces"`
	PeakErrGrowingN int `json:"peakErrorTracesGrowing"`
}

// Summarize averages leads over growing traces, counting a missed or
// too-late mark as zero lead so that a silent predictor cannot look good.
func Summarize(rs []Result) Summary {
	var s Summary
	var errSum, errGrowSum float64
	var errN, errGrowN int
	for _, r := range rs {
		if r.PeakErrorAt10Pct != nil {
			errSum += *r.PeakErrorAt10Pct
			errN++
			if r.OOM != nil {
				errGrowSum += *r.PeakErrorAt10Pct
				errGrowN++
			}
		}
		if r.OOM == nil {
			s.NonGrowing++
			if r.FalseMark {
				s.FalseMarks++
			}
			continue
		}
		s.Growing++
		if r.LeadSamples != nil && *r.LeadSamples > 0 {
			s.MarkedInTime++
			s.MeanLead += float64(*r.LeadSamples)
			s.MeanLeadPct += *r.LeadPct
		}
	}
	if s.Growing > 0 {
		s.MeanLead /= float64(s.Growing)
		s.MeanLeadPct /= float64(s.Growing)
	}
	s.PeakErrN, s.PeakErrGrowingN = errN, errGrowN
	if errN > 0 {
		s.MeanPeakErr = errSum / float64(errN)
	}
	if errGrowN > 0 {
		s.MeanPeakErrGrowing = errGrowSum / float64(errGrowN)
	}
	return s
}
