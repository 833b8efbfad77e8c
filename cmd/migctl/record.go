package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/spf13/cobra"

	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/record"
)

const recordUsage = "usage: migctl record [--output FILE] [--samples FILE] [--history FILE --key KEY] [--simulate MODEL [--profile P]] [--shim PATH | --no-shim] [--no-nvml] -- COMMAND [ARGS...]"

// auto as --shim or --sim-driver looks beside migctl (see ctl.FindBeside).
const auto = ctl.Auto

type recordOptions struct {
	output, samples   string
	simulate, profile string
	shim, simDriver   string
	noShim, noNVML    bool
	history, key      string
	interval          time.Duration
}

func newRecordCmd() *cobra.Command {
	o := &recordOptions{}
	const short = "run a command with the telemetry shim and record its GPU memory series"
	cmd := &cobra.Command{
		Use:   "record [flags] -- COMMAND [ARGS...]",
		Short: short,
		Long: short + `.

The command runs with libmigpro-shim.so preloaded; its stdin, stdout and stderr are
its own, signals sent to migctl are passed on, and migctl exits with the command's
status (128+N when signal N killed it; 127 when it is not found, 126 when it cannot
be executed). The series (t, used_bytes, requested_bytes, driver_allocs) is written
in the trace format migctl predict and migctl estimate read; where NVML is available
used_bytes is max(shim, NVML's per-process memory). No agent is needed.
--simulate runs the command on the simulated driver's stub libcuda, on a MIG instance
of a simulated GPU made for the run (--profile, default the whole GPU).`,
		Example: "  migctl record --output gen.csv -- python3 generate.py\n" +
			"  migctl predict --capacity 5Gi gen.csv\n" +
			"  migctl record --simulate a100-40gb --profile 1g.5gb -- ./my-cuda-program",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return recordUsagef("no command given; %s", recordUsage)
			}
			return o.run(cmd, args)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.StringVarP(&o.output, "output", "o", "record.csv", "the trace file to write")
	f.StringVar(&o.samples, "samples", "", "also write every source's figures (shim bytes, peak, allocs, frees, NVML) to this CSV")
	f.StringVar(&o.simulate, "simulate", "", "run on a simulated GPU of this model ("+strings.Join(simgpu.Models(), ", ")+")")
	f.StringVar(&o.profile, "profile", "", "with --simulate, the MIG profile of the instance (default: the whole GPU)")
	f.StringVar(&o.shim, "shim", auto, "libmigpro-shim.so to preload; \"auto\": beside migctl, or ../lib/migpro/ from it")
	f.StringVar(&o.simDriver, "sim-driver", auto, "with --simulate, the directory of the simulated driver's stubs (make simdriver); \"auto\": simdriver/ beside migctl, or ../lib/migpro/simdriver")
	f.BoolVar(&o.noShim, "no-shim", false, "run without the shim (NVML only): the same run, to compare")
	f.BoolVar(&o.noNVML, "no-nvml", false, "do not poll NVML")
	f.StringVar(&o.history, "history", "", "add the run's peak to this history store, which migctl estimate --history reads (needs --key)")
	f.StringVar(&o.key, "key", "", "with --history, the workload's key")
	f.DurationVar(&o.interval, "interval", record.DefaultInterval, "sampling period of the shim and of NVML")
	return cmd
}

func (o *recordOptions) run(cmd *cobra.Command, args []string) error {
	stderr := cmd.ErrOrStderr()
	if o.interval < time.Millisecond {
		return recordUsagef("--interval must be at least 1ms, not %s", o.interval)
	}
	if (o.history == "") != (o.key == "") {
		return recordUsagef("--history and --key go together")
	}
	var hist *estimator.History
	if o.history != "" {
		var err error
		if hist, err = estimator.OpenHistory(o.history); err != nil {
			return err
		}
	}
	if o.profile != "" && o.simulate == "" {
		return recordUsagef("--profile needs --simulate")
	}
	if _, err := record.LookPath(args[0]); err != nil {
		var se *record.StartError
		if errors.As(err, &se) {
			return exitError{code: se.Code, err: err}
		}
		return err
	}
	// Open the output first: an unwritable path fails before the command runs.
	out, err := os.Create(o.output)
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	defer out.Close()
	var samples *os.File
	if o.samples != "" {
		if samples, err = os.Create(o.samples); err != nil {
			return fmt.Errorf("samples: %w", err)
		}
		defer samples.Close()
	}
	c := record.Config{Command: args, Interval: o.interval, ForwardSignals: true,
		Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: stderr, Log: quietlog.New()}
	if !o.noShim {
		if c.Shim, err = ctl.FindBeside(o.shim, "libmigpro-shim.so", "--shim", "build it with `make shim`, pass --shim PATH, or run with --no-shim"); err != nil {
			return err
		}
	}
	comments := []string{"migctl record -- " + strings.Join(args, " ")}
	if o.simulate != "" {
		sim, err := ctl.SimulatedDriver(o.simulate, o.profile, o.simDriver)
		if err != nil {
			return err
		}
		defer sim.Close()
		c.ExtraEnv = sim.Env
		if !o.noNVML {
			c.NVML = sim.Source()
		}
		comments = append(comments, fmt.Sprintf("simulated %s, instance %s (%s)", o.simulate, sim.Profile.Name, sim.Instance.UUID))
	} else if !o.noNVML {
		src, err := record.OpenNVML(nvml.New())
		if err != nil {
			fmt.Fprintf(stderr, "migctl record: %v: recording the shim's figures only\n", err)
		} else {
			defer src.Close()
			c.NVML = src
		}
	}
	if c.NVML != nil {
		comments = append(comments, "nvml: "+c.NVML.Describe())
	}
	if c.Shim == "" {
		comments = append(comments, "no shim: requested_bytes and driver_allocs are 0")
	}
	res, err := record.Run(c)
	if err != nil {
		var se *record.StartError
		if errors.As(err, &se) {
			return exitError{code: se.Code, err: err}
		}
		return err
	}
	comments = append(comments, fmt.Sprintf("exit %d after %.3fs, started at unix %.3f", res.ExitCode, res.Wall.Seconds(), float64(res.Start.UnixNano())/1e9))
	if err := record.WriteTrace(out, filepath.Base(o.output), comments, res.Rows); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if samples != nil {
		if err := record.WriteSamples(samples, res.Start, res.Rows); err != nil {
			return fmt.Errorf("samples: %w", err)
		}
		if err := samples.Close(); err != nil {
			return fmt.Errorf("samples: %w", err)
		}
	}
	peak := summarise(stderr, o.output, res)
	if hist != nil && !res.Empty() {
		if err := hist.Record(o.key, peak, time.Now()); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "migctl record: peak %d bytes recorded for %q in %s; size it with: migctl estimate --gpu MODEL --history %s --key %s\n",
			peak, o.key, o.history, o.history, o.key)
	}
	if res.ExitCode != 0 {
		return exitError{code: res.ExitCode}
	}
	return nil
}

// summarise prints one line, what was seen or that nothing was, and
// returns the peak of used_bytes.
func summarise(w io.Writer, path string, res record.Result) uint64 {
	if res.Empty() {
		fmt.Fprintf(w, "migctl record: no CUDA allocations seen (the command made no driver allocation and NVML charged it nothing); wrote an empty trace to %s\n", path)
		return 0
	}
	var peakShim, peakNVML, peakUsed, allocs uint64
	for _, r := range res.Rows {
		peakShim, peakNVML, peakUsed = max(peakShim, r.ShimBytes), max(peakNVML, r.NVMLProcess), max(peakUsed, r.Used())
		allocs = max(allocs, r.Allocs)
	}
	fmt.Fprintf(w, "migctl record: %d samples over %.1fs, peak %s (shim %s, NVML %s), %d driver allocations, exit %d; trace in %s\n",
		len(res.Rows), res.Wall.Seconds(), sizeOf(peakUsed), sizeOf(peakShim), sizeOf(peakNVML), allocs, res.ExitCode, path)
	return peakUsed
}
