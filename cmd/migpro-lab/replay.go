package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/replay"
)

const replayUsage = "usage: migpro-lab replay [--mix small|mixed|llm|pcie|stream | --csv FILE] [--jobs N] [--seed S] [--ratio S:M:L:F] [--load F] [--simulate MODEL[:COUNT][,MODEL[:COUNT]…]] [--nodes N] [--policies all|NAME,...] [--pcie-max GBPS] [--pcie-alpha A] [--plot DIR] [--timeline-gpu G] [--write-csv FILE] [--output text|json] [--check] | --targets [--seeds tune|valid|held|tune3|held3|S,S,...] [--openb DIR] [--policies NAME] [--sweep-reserve-after 0,30s,1m,... [--plot DIR]]"

// replayOptions are replay's flags, bound by newReplayCmd and completed by
// complete.
type replayOptions struct {
	mix, csvPath, writeCSV, plotDir, output string
	spec                                    replay.MixSpec
	cfg                                     replay.Config
	policies                                []replay.Strategy
	timelineGPU                             int
	node, ratio, policyList                 string
	jobs                                    int
	seed                                    uint64
	// targets measures issue 28's targets (targets.go).
	targets         bool
	seeds, openbDir string
	// sweepReserve, with --targets, sweeps the reservation rule's limit
	// (frontier.go).
	sweepReserve string
}

// replayJSON is one policy's result for --output json (runs left out).
type replayJSON struct {
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
	// Fragmented lists the fragmentation waits, each with the instances
	// in the way on every GPU that had the slices and slots for it.
	Fragmented []replay.FragmentedWait `json:"fragmentationWaits"`
	// The metrics users feel (docs/replay-workloads.md): NVML steps per
	// job, arrival-to-start by request size, and each GPU's stranded
	// compute slices averaged over the makespan (global GPU index).
	StepsPerJob float64           `json:"stepsPerJob"`
	StartWaits  []replay.SizeWait `json:"startWaits"`
	Stranded    []float64         `json:"strandedSlicesPerGPU"`
	// SimulatorOnly: the figures are the simulator's, not the agent's (a
	// policy the agent lacks, or more than one node).
	SimulatorOnly bool `json:"simulatorOnly"`
}

func (opt *replayOptions) run(stdout io.Writer) error {
	model, err := replay.LoadModel(opt.cfg.Model)
	if err != nil {
		return ctl.Usagef("--gpu: %v", err)
	}
	jobs, what, err := loadJobs(*opt, model)
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
		out := make([]replayJSON, len(results))
		for i, r := range results {
			out[i] = replayJSON{r.Policy, r.Detail, r.Jobs, r.Makespan, r.Throughput, r.MeanJCT, r.P95JCT, r.MemUtil,
				r.Reconfigs, r.Restarts, r.Marks, r.Moves, r.Reservations, r.Backfills, r.LostWork, r.LowerBound, r.Ratio, r.Wall.Seconds(),
				append([]replay.FragmentedWait{}, r.FragmentedWaits...), r.StepsPerJob(), append([]replay.SizeWait{}, r.StartWaits...),
				append([]float64{}, r.Stranded...), r.SimulatorOnly()}
		}
		if err := ctl.WriteJSON(stdout, out); err != nil {
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

func newReplayCmd() *cobra.Command {
	opt := &replayOptions{}
	const short = "compare placement policies by replaying workloads on simulated nodes"
	cmd := &cobra.Command{
		Use:   "replay",
		Short: short,
		Long: short + ".\n\nReplays a generated or recorded workload under several placement policies on\n" +
			"simulated nodes and compares makespan, job completion time and utilisation.",
		Example: "  migpro-lab replay --mix mixed --policies migpro,first-fit\n" +
			"  migpro-lab replay --mix online --simulate a100-40gb:2 --load 0.9 --policies first-fit,migpro,migpro+plan\n" +
			"  migpro-lab replay --simulate a100-40gb:2,h100-80gb:1 --mix stream --output json\n" +
			"  migpro-lab replay --csv jobs.csv --plot charts/\n" +
			"  migpro-lab replay --targets --seeds tune --openb /path/to/openb\n" +
			"  migpro-lab replay --targets --sweep-reserve-after 0,30s,1m,2m,5m,10m,20m --plot charts/",
		Aliases: []string{"simulate"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opt.targets {
				return opt.runTargets(cmd, args)
			}
			if cmd.Flags().Changed("sweep-reserve-after") {
				return ctl.Usagef("--sweep-reserve-after sweeps the targets; add --targets")
			}
			if err := opt.complete(cmd, args); err != nil {
				return err
			}
			return opt.run(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.mix, "mix", "", "generated workload: small, mixed, llm, pcie or stream (default small)")
	f.StringVar(&opt.csvPath, "csv", "", "replay jobs from a CSV file, ours or an OpenB pod list (see docs/replay-workloads.md)")
	f.IntVar(&opt.jobs, "jobs", 0, "number of generated jobs (default: the mix's)")
	f.Uint64Var(&opt.seed, "seed", 1, "seed of the generated workload and of the simulation")
	f.StringVar(&opt.ratio, "ratio", "4:0:1:1", "small:medium:large:full weights of the mixed mix")
	f.Float64Var(&opt.spec.Load, "load", 0, "offered load of the Poisson mixes (default: stream 0.9, pcie 0.7)")
	f.StringVar(&opt.node, "simulate", "", "each node's simulated GPUs, MODEL[:COUNT][,MODEL[:COUNT]…] as the agent's --simulate (models: "+
		strings.Join(simgpu.Models(), ", ")+"; default a100-40gb:8)")
	f.StringVar(&opt.cfg.Model, "gpu", "a100-40gb", "GPU model; older spelling, use --simulate")
	f.IntVar(&opt.cfg.Nodes, "nodes", 0, "nodes (default 20 for stream, else 1)")
	f.IntVar(&opt.cfg.GPUsPerNode, "gpus", 8, "GPUs per node; older spelling, use --simulate MODEL:COUNT")
	f.StringVar(&opt.policyList, "policies", "all", "policies to compare: all, or a comma list of "+strings.Join(replay.PolicyNames(), ", ")+" (static:LAYOUT pins a layout)")
	f.Float64Var(&opt.cfg.PCIeMax, "pcie-max", 25, "PCIe bandwidth of one GPU, GB/s")
	f.Float64Var(&opt.cfg.PCIeAlpha, "pcie-alpha", 1, "α of the PCIe slowdown max(1, α·demand/(max/n))")
	f.StringVar(&opt.plotDir, "plot", "", "write PNG charts into this directory")
	f.IntVar(&opt.timelineGPU, "timeline-gpu", 0, "GPU (global index) whose layout the timeline charts show")
	f.StringVar(&opt.writeCSV, "write-csv", "", "also write the jobs to this CSV file (for replay)")
	f.StringVarP(&opt.output, "output", "o", "text", "output format, text or json (env "+ctl.EnvOutput+")")
	f.BoolVar(&opt.cfg.Check, "check", false, "verify after every event that no GPU is over-committed (slower)")
	f.BoolVar(&opt.targets, "targets", false, "measure issue 28's targets instead: one policy (--policies, default migpro) against first-fit, nvidia-dra, hami and static on every configuration, summed over --seeds (the figures of go test -bench Targets ./replay/)")
	f.StringVar(&opt.seeds, "seeds", "tune", "with --targets: tune (the fifteen tuning seeds 1-3, 7-18), valid (19-33, once held out, used to choose between changes), held (34-48, kept apart from tuning and choosing: run once, at the end), tune3 (1-3, quick), held3 (4-6, the earlier held-out set) or a list such as 7,8,9")
	f.StringVar(&opt.sweepReserve, "sweep-reserve-after", "", "with --targets: the reservation frontier instead, migpro with the agent's --reserve-after at each limit of this list (0 for never, e.g. 0,30s,1m,2m,5m,10m,20m; Kx, +large, +anynode, +near and +oracle are simulator-only trials, docs/replay-frontier.md) against the baselines; with --policies migpro/exact, the same rule for pods (simulator only: the agent reserves for local callers only); --plot DIR draws frontier.png")
	f.StringVar(&opt.openbDir, "openb", os.Getenv("MIGPRO_OPENB_DIR"), "with --targets: folder of the OpenB pod lists, adding their two configurations (default $MIGPRO_OPENB_DIR)")
	return cmd
}

func (opt *replayOptions) complete(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return ctl.Usagef("unexpected argument %q; %s", args[0], replayUsage)
	}
	if opt.node != "" {
		if err := applyNodeSpec(cmd.Flags(), opt.node, &opt.cfg); err != nil {
			return err
		}
	}
	if opt.mix != "" && opt.csvPath != "" {
		return ctl.Usagef("--mix and --csv exclude each other; %s", replayUsage)
	}
	if opt.mix == "" && opt.csvPath == "" {
		opt.mix = "small"
	}
	out := ctl.OutputOptions{Format: opt.output}
	if err := out.Complete(cmd.Flags()); err != nil {
		return err
	}
	opt.output = out.Format
	if opt.jobs < 0 {
		return ctl.Usagef("--jobs %d: want a positive count", opt.jobs)
	}
	if opt.cfg.Nodes < 0 {
		return ctl.Usagef("--nodes %d: want at least 1", opt.cfg.Nodes)
	}
	if opt.cfg.Nodes == 0 {
		opt.cfg.Nodes = 1
		if opt.mix == "stream" {
			opt.cfg.Nodes = 20
		}
	}
	var err error
	if opt.spec.Ratio, err = replay.ParseRatio(opt.ratio); err != nil {
		return ctl.Usagef("--ratio: %v", err)
	}
	if opt.spec.Load < 0 || opt.spec.Load > 100 || opt.spec.Load != opt.spec.Load {
		return ctl.Usagef("--load %v: want a number above 0 (1 is the cluster's best rate)", opt.spec.Load)
	}
	if err := opt.cfg.Validate(); err != nil {
		return ctl.Usagef("%v", err)
	}
	if opt.policies, err = replay.ParsePolicies(opt.policyList); err != nil {
		return ctl.Usagef("--policies: %v", err)
	}
	if g := opt.cfg.GPUs(); opt.timelineGPU < 0 || opt.timelineGPU >= g {
		return ctl.Usagef("--timeline-gpu %d: the cluster has GPUs 0 to %d", opt.timelineGPU, g-1)
	}
	opt.spec.Name, opt.spec.Jobs, opt.spec.Seed = opt.mix, opt.jobs, opt.seed
	opt.spec.GPUs = opt.cfg.GPUs()
	opt.cfg.Seed = int64(opt.seed & (1<<62 - 1))
	return nil
}

// loadJobs generates the mix or reads the CSV; bad input is a usage error.
func loadJobs(opt replayOptions, model *replay.Model) ([]replay.Job, string, error) {
	var jobs []replay.Job
	var what string
	if opt.csvPath != "" {
		f, err := os.Open(opt.csvPath)
		if err != nil {
			return nil, "", ctl.Usagef("--csv: %v", err)
		}
		defer f.Close()
		if jobs, what, err = replay.ReadJobs(f, model, opt.spec); err != nil {
			return nil, "", ctl.Usagef("--csv %s: %v", opt.csvPath, err)
		}
		what = fmt.Sprintf("%s (%s)", opt.csvPath, what)
	} else {
		var err error
		if jobs, err = replay.Generate(opt.spec, model); err != nil {
			return nil, "", ctl.Usagef("--mix: %v", err)
		}
		what = fmt.Sprintf("mix %s (%d jobs, seed %d)", opt.mix, len(jobs), opt.spec.Seed)
		if opt.mix == "mixed" {
			what = fmt.Sprintf("mix mixed %s (%d jobs, seed %d)", ratioString(opt.spec.Ratio), len(jobs), opt.spec.Seed)
		}
	}
	if err := replay.ValidateAll(jobs, model.Largest()); err != nil {
		return nil, "", ctl.Usagef("%v", err)
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
func applyNodeSpec(fs *pflag.FlagSet, spec string, cfg *replay.Config) error {
	var clash []string
	for _, name := range []string{"gpu", "gpus"} {
		if fs.Changed(name) {
			clash = append(clash, "--"+name)
		}
	}
	if len(clash) > 0 {
		return ctl.Usagef("--simulate gives the node's GPUs; drop %s", strings.Join(clash, " and "))
	}
	mcs, err := simgpu.ParseSpec(spec)
	if err != nil {
		return ctl.Usagef("--simulate: %v", err)
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
