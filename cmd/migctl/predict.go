package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/eval"
	"github.com/migpro/migpro/predictor/trace"
)

const predictUsage = "usage: migctl predict --capacity BYTES [--horizon T] [--algorithm baseline|migpro|both] [--gpu MODEL] [--output text|json] TRACE_OR_DIR…"

// predictOpts is the parsed command line.
type predictOpts struct {
	capacity   uint64
	horizon    float64
	algorithms []predictor.Algorithm
	profiles   []estimator.ProfileSize
	context    uint64
	json       bool
	paths      []string
}

// scored is one trace's result for one algorithm. The algorithm key is only
// written with --algorithm both, so the single-algorithm JSON keeps exactly
// the documented keys.
type scored struct {
	eval.Result
	Algorithm predictor.Algorithm `json:"algorithm,omitempty"`
}

// predictFlags are predict's flags as given; complete turns them into
// predictOpts.
type predictFlags struct {
	out                       ctl.OutputOptions
	capacity, alg, model, ctx string
	horizon                   float64
}

func newPredictCmd() *cobra.Command {
	fl := &predictFlags{}
	const short = "score the predictor on memory traces"
	cmd := &cobra.Command{
		Use:     "predict TRACE_OR_DIR…",
		Short:   short,
		Long:    long(short, "Scores the out-of-memory predictor on memory traces: when it marks, how early\nbefore the OOM, and its false marks."),
		Example: "  migctl predict --capacity 10Gi predictor/testdata\n  migctl predict --capacity 10Gi --algorithm both --output json predictor/testdata/flat.csv",
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := fl.complete(cmd, args)
			if err != nil {
				return err
			}
			return runPredict(cmd.OutOrStdout(), opt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.capacity, "capacity", "", "the instance's usable memory: bytes, or a quantity such as 10Gi, 10GiB or 10G")
	f.Float64Var(&fl.horizon, "horizon", 0, "expected end of the workload, in t units (0: unknown)")
	f.StringVar(&fl.alg, "algorithm", "migpro", "baseline (the plain least-squares fit), migpro, or both side by side")
	f.StringVar(&fl.model, "gpu", "", "GPU model whose profiles to recommend from ("+strings.Join(simgpu.Models(), ", ")+")")
	f.StringVar(&fl.ctx, "context", "512Mi", "CUDA context overhead added when choosing a profile")
	fl.out.AddFlagsTo(cmd)
	_ = cmd.RegisterFlagCompletionFunc("gpu", ctl.CompleteModels)
	_ = cmd.RegisterFlagCompletionFunc("algorithm", ctl.Words("baseline", "migpro", "both"))
	return cmd
}

func runPredict(stdout io.Writer, opt predictOpts) error {
	traces, err := loadTraces(opt.paths)
	if err != nil {
		return ctl.UsageError{Err: err}
	}
	results := make(map[predictor.Algorithm][]eval.Result)
	for _, alg := range opt.algorithms {
		cfg := predictor.Config{
			Algorithm: alg, Capacity: opt.capacity, Horizon: opt.horizon,
			Profiles: opt.profiles, ContextBytes: opt.context,
		}
		for _, tr := range traces {
			r, err := eval.Score(tr, eval.Options{Config: cfg})
			if err != nil {
				return ctl.UsageError{Err: err}
			}
			results[alg] = append(results[alg], r)
		}
	}
	if opt.json {
		return writePredictJSON(stdout, opt.algorithms, results)
	}
	return writePredictText(stdout, opt, results)
}

func (fl *predictFlags) complete(cmd *cobra.Command, args []string) (predictOpts, error) {
	opt := predictOpts{horizon: fl.horizon}
	if fl.capacity == "" {
		return opt, ctl.Usagef("--capacity is required; %s", predictUsage)
	}
	var err error
	if opt.capacity, err = ctl.ParseBytes(fl.capacity); err != nil {
		return opt, ctl.Usagef("--capacity: %v", err)
	}
	if opt.horizon < 0 {
		return opt, ctl.Usagef("--horizon %v: must not be negative", opt.horizon)
	}
	switch fl.alg {
	case "baseline", "migpro":
		opt.algorithms = []predictor.Algorithm{predictor.Algorithm(fl.alg)}
	case "both":
		opt.algorithms = []predictor.Algorithm{predictor.Baseline, predictor.Migpro}
	default:
		return opt, ctl.Usagef("--algorithm %q: want baseline, migpro or both", fl.alg)
	}
	if err := fl.out.Complete(cmd.Flags()); err != nil {
		return opt, err
	}
	opt.json = fl.out.JSON()
	if opt.context, err = ctl.ParseBytes(fl.ctx); err != nil {
		return opt, ctl.Usagef("--context: %v", err)
	}
	if fl.model != "" {
		if opt.profiles, err = modelProfileSizes(fl.model); err != nil {
			return opt, ctl.Usagef("--gpu: %v", err)
		}
	}
	if opt.paths = args; len(opt.paths) == 0 {
		return opt, ctl.Usagef("no trace files or directories given; %s", predictUsage)
	}
	return opt, nil
}

// loadTraces reads files and the *.csv files of directories, in name order.
func loadTraces(paths []string) ([]trace.Trace, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, unwrapPath(err))
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.csv"))
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s: no *.csv traces in directory", p)
		}
		sort.Strings(matches)
		files = append(files, matches...)
	}
	out := make([]trace.Trace, 0, len(files))
	for _, f := range files {
		tr, err := trace.ReadFile(f)
		if err != nil {
			return nil, unwrapPath(err)
		}
		tr.Name = strings.TrimSuffix(filepath.Base(f), ".csv")
		out = append(out, tr)
	}
	return out, nil
}

// unwrapPath drops os's "stat x:" prefix where the caller names the path.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

func writePredictJSON(w io.Writer, algs []predictor.Algorithm, results map[predictor.Algorithm][]eval.Result) error {
	out := []scored{}
	for _, alg := range algs {
		for _, r := range results[alg] {
			s := scored{Result: r}
			if len(algs) > 1 {
				s.Algorithm = alg
			}
			out = append(out, s)
		}
	}
	return ctl.WriteJSON(w, out)
}

func writePredictText(w io.Writer, opt predictOpts, results map[predictor.Algorithm][]eval.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	horizon := "unknown (baseline uses each trace's last t)"
	if opt.horizon > 0 {
		horizon = fmt.Sprint(opt.horizon)
	}
	fmt.Fprintf(tw, "capacity %s (%d bytes), horizon %s\n", estimator.FormatBytes(opt.capacity), opt.capacity, horizon)
	for _, alg := range opt.algorithms {
		fmt.Fprintf(tw, "\n%s\nTRACE\tMARK\tOOM\tLEAD\tLEAD%%\tERR@10%%\tFALSE MARK\tPROFILE\tREASON\n", alg)
		for _, r := range results[alg] {
			reason, profile := "-", "-"
			if r.Decision != nil {
				reason = string(r.Decision.Reason)
			}
			if r.Profile != nil {
				profile = *r.Profile
				if !r.Decision.Fits {
					profile += " (too small)"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Trace, fmtT(r.Mark), fmtT(r.OOM),
				fmtInt(r.LeadSamples), fmtPct(r.LeadPct), fmtPct(r.PeakErrorAt10Pct), yesNo(r.FalseMark), profile, reason)
		}
	}
	fmt.Fprintf(tw, "\nSUMMARY")
	sums := make([]eval.Summary, len(opt.algorithms))
	for i, alg := range opt.algorithms {
		sums[i] = eval.Summarize(results[alg])
		fmt.Fprintf(tw, "\t%s", alg)
	}
	fmt.Fprintln(tw)
	rows := []struct {
		name string
		val  func(eval.Summary) string
	}{
		{"marked before OOM", func(s eval.Summary) string { return fmt.Sprintf("%d/%d", s.MarkedInTime, s.Growing) }},
		{"mean lead (samples)", func(s eval.Summary) string { return fmt.Sprintf("%.1f", s.MeanLead) }},
		{"mean lead (% of run to OOM)", func(s eval.Summary) string { return fmt.Sprintf("%.1f%%", s.MeanLeadPct) }},
		{"false marks", func(s eval.Summary) string { return fmt.Sprintf("%d/%d", s.FalseMarks, s.NonGrowing) }},
		{"peak error at 10%, growing", func(s eval.Summary) string { return meanPct(s.MeanPeakErrGrowing, s.PeakErrGrowingN) }},
		{"peak error at 10%, all", func(s eval.Summary) string { return meanPct(s.MeanPeakErr, s.PeakErrN) }},
	}
	for _, row := range rows {
		fmt.Fprint(tw, row.name)
		for _, s := range sums {
			fmt.Fprintf(tw, "\t%s", row.val(s))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func meanPct(v float64, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", v)
}

func fmtT(t *float64) string {
	if t == nil {
		return "-"
	}
	return fmt.Sprint(*t)
}

func fmtInt(n *int) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

func fmtPct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *p)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
