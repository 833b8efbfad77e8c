package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/replay"
)

func init() {
	register("replay", "compare placement policies by replaying workloads on simulated nodes", runSimulate)
}

const simulateUsage = "usage: migctl replay [--mix small|mixed|llm|pcie|stream | --csv FILE] [--jobs N] [--seed S] [--ratio S:M:L:F] [--load F] [--simulate MODEL[:COUNT][,MODEL[:COUNT]…]] [--nodes N] [--policies all|NAME,...] [--pcie-max GBPS] [--pcie-alpha A] [--plot DIR] [--timeline-gpu G] [--write-csv FILE] [--output text|json] [--check]"

// simulateOpts is the parsed command line.
type simulateOpts struct {
	mix, csvPath, writeCSV, plotDir, output string
	spec                                    replay.MixSpec
	cfg                                     replay.Config
	policies                                []replay.Strategy
	timelineGPU                             int
}

// simulateJSON is one policy's result for --output json (runs left out).
type simulateJSON struct {
	Policy     string  `json:"policy"`
	Detail     string  `json:"detail"`
	Jobs       int     `json:"jobs"`
	Makespan   float64 `json:"makespanSeconds"`
	Throughput float64 `json:"jobsPerSecond"`
	MeanJCT    float64 `json:"meanJCTSeconds"`
	P95JCT     float64 `json:"p95JCTSeconds"`
	MemUtil    float64 `json:"memoryUtilisation"`
	Reconfigs  int     `json:"reconfigurations"`
	Restarts   int     `json:"restarts"`
	Marks      int     `json:"predictorMarks"`
	QueueMoves int     `json:"queueMoves"`
	// Reservations and Backfills: GPUs held for a starving job, and jobs
	// started in held slots, expected to end before they were needed.
	Reservations int     `json:"reservations"`
	Backfills    int     `json:"backfills"`
	LostWork     float64 `json:"lostWorkSeconds"`
	LowerBound   float64 `json:"lowerBoundSeconds"`
	Ratio        float64 `json:"makespanOverLowerBound"`
	WallSeconds  float64 `json:"wallSeconds"`
}

func runSimulate(args []string, stdout io.Writer) error {
	opt, err := parseSimulate(args)
	if err != nil {
		return err
	}
	model, err := replay.LoadModel(opt.cfg.Model)
	if err != nil {
		return usagef("--gpu: %v", err)
	}
	jobs, what, err := loadJobs(opt, model)
	if err != nil {
		return err
	}
	if opt.writeCSV != "" {
		if err := writeJobs(opt.writeCSV, jobs); err != nil {
			return err
		}
	}
	gpus := opt.cfg.GPUs()
	cluster := fmt.Sprintf("%d node(s) × %d %s = %d GPUs", opt.cfg.Nodes, opt.cfg.GPUsPerNode, model.Name, gpus)
	if strings.Contains(opt.cfg.Model, ",") {
		cluster = fmt.Sprintf("%d node(s) of %s = %d GPUs", opt.cfg.Nodes, opt.cfg.Model, gpus)
	}
	start := time.Now()
	var results []*replay.Result
	for _, p := range opt.policies {
		r, err := replay.Run(jobs, opt.cfg, p)
		if err != nil {
			return fmt.Errorf("%s on %s: %w", p.Name, what, err)
		}
		results = append(results, r)
	}
	wall := time.Since(start)
	if opt.output == "json" {
		out := make([]simulateJSON, len(results))
		for i, r := range results {
			out[i] = simulateJSON{r.Policy, r.Detail, r.Jobs, r.Makespan, r.Throughput, r.MeanJCT, r.P95JCT, r.MemUtil,
				r.Reconfigs, r.Restarts, r.Marks, r.Moves, r.Reservations, r.Backfills, r.LostWork, r.LowerBound, r.Ratio, r.Wall.Seconds()}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "workload: %s; cluster: %s\n\n", what, cluster)
		if err := replay.WriteTable(stdout, results); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
		if err := replay.WriteUserMetrics(stdout, results); err != nil {
			return err
		}
		if err := replay.WriteComparison(stdout, results); err != nil {
			return err
		}
	}
	if opt.plotDir != "" {
		files, err := replay.PlotAll(opt.plotDir, what+", "+cluster, results, opt.timelineGPU, model.Slots)
		if err != nil {
			return err
		}
		if opt.output != "json" {
			fmt.Fprintf(stdout, "\ncharts: %s\n", strings.Join(files, ", "))
		}
	}
	if opt.output != "json" {
		var per []string
		for _, r := range results {
			per = append(per, fmt.Sprintf("%s %.2f s", r.Policy, r.Wall.Seconds()))
		}
		fmt.Fprintf(stdout, "\nwall time: %.2f s for %d policies (%s)\n", wall.Seconds(), len(results), strings.Join(per, ", "))
	}
	return nil
}

func parseSimulate(args []string) (simulateOpts, error) {
	var opt simulateOpts
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.StringVar(&opt.mix, "mix", "", "generated workload: small, mixed, llm, pcie or stream (default small)")
	fs.StringVar(&opt.csvPath, "csv", "", "replay jobs from a CSV file, ours or an OpenB pod list (see docs/replay.md)")
	jobs := fs.Int("jobs", 0, "number of generated jobs (default: the mix's)")
	seed := fs.Uint64("seed", 1, "seed of the generated workload and of the simulation")
	ratio := fs.String("ratio", "4:0:1:1", "small:medium:large:full weights of the mixed mix")
	fs.Float64Var(&opt.spec.Load, "load", 0, "offered load of the Poisson mixes (default: stream 0.9, pcie 0.7)")
	node := fs.String("simulate", "", "each node's simulated GPUs, MODEL[:COUNT][,MODEL[:COUNT]…] as the agent's --simulate (models: "+
		strings.Join(simgpu.Models(), ", ")+"; default a100-40gb:8)")
	fs.StringVar(&opt.cfg.Model, "gpu", "a100-40gb", "GPU model; older spelling, use --simulate")
	fs.IntVar(&opt.cfg.Nodes, "nodes", 0, "nodes (default 20 for stream, else 1)")
	fs.IntVar(&opt.cfg.GPUsPerNode, "gpus", 8, "GPUs per node; older spelling, use --simulate MODEL:COUNT")
	policies := fs.String("policies", "all", "policies to compare: all, or a comma list of "+strings.Join(replay.PolicyNames(), ", ")+" (static:LAYOUT pins a layout)")
	fs.Float64Var(&opt.cfg.PCIeMax, "pcie-max", 25, "PCIe bandwidth of one GPU, GB/s")
	fs.Float64Var(&opt.cfg.PCIeAlpha, "pcie-alpha", 1, "α of the PCIe slowdown max(1, α·demand/(max/n))")
	fs.StringVar(&opt.plotDir, "plot", "", "write PNG charts into this directory")
	fs.IntVar(&opt.timelineGPU, "timeline-gpu", 0, "GPU (global index) whose layout the timeline charts show")
	fs.StringVar(&opt.writeCSV, "write-csv", "", "also write the jobs to this CSV file (for replay)")
	fs.StringVar(&opt.output, "output", "text", "text or json")
	fs.BoolVar(&opt.cfg.Check, "check", false, "verify after every event that no GPU is over-committed (slower)")
	if err := parseFlags(fs, args); err != nil {
		return opt, err
	}
	if fs.NArg() > 0 {
		return opt, usagef("unexpected argument %q; %s", fs.Arg(0), simulateUsage)
	}
	if *node != "" {
		if err := applyNodeSpec(fs, *node, &opt.cfg); err != nil {
			return opt, err
		}
	}
	if opt.mix != "" && opt.csvPath != "" {
		return opt, usagef("--mix and --csv exclude each other; %s", simulateUsage)
	}
	if opt.mix == "" && opt.csvPath == "" {
		opt.mix = "small"
	}
	if opt.output != "text" && opt.output != "json" {
		return opt, usagef("--output %q: want text or json", opt.output)
	}
	if *jobs < 0 {
		return opt, usagef("--jobs %d: want a positive count", *jobs)
	}
	if opt.cfg.Nodes < 0 {
		return opt, usagef("--nodes %d: want at least 1", opt.cfg.Nodes)
	}
	if opt.cfg.Nodes == 0 {
		opt.cfg.Nodes = 1
		if opt.mix == "stream" {
			opt.cfg.Nodes = 20
		}
	}
	var err error
	if opt.spec.Ratio, err = replay.ParseRatio(*ratio); err != nil {
		return opt, usagef("--ratio: %v", err)
	}
	if opt.spec.Load < 0 || opt.spec.Load > 100 || opt.spec.Load != opt.spec.Load {
		return opt, usagef("--load %v: want a number above 0 (1 is the cluster's best rate)", opt.spec.Load)
	}
	if err := opt.cfg.Validate(); err != nil {
		return opt, usagef("%v", err)
	}
	if opt.policies, err = replay.ParsePolicies(*policies); err != nil {
		return opt, usagef("--policies: %v", err)
	}
	if g := opt.cfg.GPUs(); opt.timelineGPU < 0 || opt.timelineGPU >= g {
		return opt, usagef("--timeline-gpu %d: the cluster has GPUs 0 to %d", opt.timelineGPU, g-1)
	}
	opt.spec.Name, opt.spec.Jobs, opt.spec.Seed = opt.mix, *jobs, *seed
	opt.spec.GPUs = opt.cfg.GPUs()
	opt.cfg.Seed = int64(*seed & (1<<62 - 1))
	return opt, nil
}

// loadJobs generates the mix or reads the CSV; bad input is a usage error.
func loadJobs(opt simulateOpts, model *replay.Model) ([]replay.Job, string, error) {
	var jobs []replay.Job
	var what string
	if opt.csvPath != "" {
		f, err := os.Open(opt.csvPath)
		if err != nil {
			return nil, "", usagef("--csv: %v", err)
		}
		defer f.Close()
		if jobs, what, err = replay.ReadJobs(f, model, opt.spec); err != nil {
			return nil, "", usagef("--csv %s: %v", opt.csvPath, err)
		}
		what = fmt.Sprintf("%s (%s)", opt.csvPath, what)
	} else {
		var err error
		if jobs, err = replay.Generate(opt.spec, model); err != nil {
			return nil, "", usagef("--mix: %v", err)
		}
		what = fmt.Sprintf("mix %s (%d jobs, seed %d)", opt.mix, len(jobs), opt.spec.Seed)
		if opt.mix == "mixed" {
			what = fmt.Sprintf("mix mixed %s (%d jobs, seed %d)", ratioString(opt.spec.Ratio), len(jobs), opt.spec.Seed)
		}
	}
	if err := replay.ValidateAll(jobs, model.Largest()); err != nil {
		return nil, "", usagef("%v", err)
	}
	return jobs, what, nil
}

func ratioString(r [4]float64) string {
	return fmt.Sprintf("%g:%g:%g:%g", r[0], r[1], r[2], r[3])
}

func writeJobs(path string, jobs []replay.Job) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--write-csv: %w", err)
	}
	if err := replay.WriteCSV(f, jobs); err != nil {
		f.Close()
		return fmt.Errorf("--write-csv %s: %w", path, err)
	}
	return f.Close()
}

// applyNodeSpec sets the model and the GPUs per node from --simulate, the
// spec grammar every migctl command and the agent share. It refuses --gpu
// and --gpus beside it.
func applyNodeSpec(fs *flag.FlagSet, spec string, cfg *replay.Config) error {
	var clash []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "gpu" || f.Name == "gpus" {
			clash = append(clash, "--"+f.Name)
		}
	})
	if len(clash) > 0 {
		return usagef("--simulate gives the node's GPUs; drop %s", strings.Join(clash, " and "))
	}
	mcs, err := simgpu.ParseSpec(spec)
	if err != nil {
		return usagef("--simulate: %v", err)
	}
	total := 0
	terms := make([]string, len(mcs))
	for i, mc := range mcs {
		total += mc.Count
		terms[i] = fmt.Sprintf("%s:%d", mc.Model, mc.Count)
	}
	cfg.Model, cfg.GPUsPerNode = mcs[0].Model, total
	if len(mcs) > 1 {
		cfg.Model = strings.Join(terms, ",")
	}
	return nil
}
