package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/replay"
)

// runTargets is `migpro-lab replay --targets`: issue 28's targets, per
// configuration, summed over the seeds, as the table of docs/replay.md. It
// computes what BenchmarkTargets reports (replay.Targets), so the two can be
// run side by side.
func (opt *replayOptions) runTargets(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return ctl.Usagef("unexpected argument %q; %s", args[0], replayUsage)
	}
	sweep := cmd.Flags().Changed("sweep-reserve-after")
	for _, name := range []string{"mix", "csv", "jobs", "seed", "load", "simulate", "gpu", "gpus", "nodes", "plot", "write-csv"} {
		if cmd.Flags().Changed(name) && (name != "plot" || !sweep) {
			return ctl.Usagef("--targets replays its own configurations; drop --%s", name)
		}
	}
	seeds, err := replay.TargetSeeds(opt.seeds)
	if err != nil {
		return ctl.Usagef("--seeds: %v", err)
	}
	if opt.openbDir != "" {
		for _, f := range []string{"openb_pod_list_default.csv", "openb_pod_list_gpushare20.csv"} {
			if _, err := os.Stat(filepath.Join(opt.openbDir, f)); err != nil {
				return ctl.Usagef("--openb %s: %v", opt.openbDir, err)
			}
		}
	}
	if sweep {
		return opt.runFrontier(cmd, seeds)
	}
	name := "migpro"
	if cmd.Flags().Changed("policies") {
		name = strings.TrimSpace(opt.policyList)
	}
	ps, err := replay.ParsePolicies(name)
	if err != nil || len(ps) != 1 {
		return ctl.Usagef("--policies %q: --targets measures one policy against the baselines (%v)", name, err)
	}
	start := time.Now()
	var rows []replay.TargetRow
	for _, c := range replay.TargetConfigs(opt.openbDir) {
		row, err := replay.Targets(c, seeds, ps[0])
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "targets of %s, seeds %v (%s), against %s (above 1: %s better; bold: a baseline ahead by more than 1%%)\n\n",
		ps[0].Name, seeds, replay.SeedSetName(opt.seeds), strings.Join(replay.TargetBaselines, ", "), ps[0].Name)
	if serves := ps[0].Serves(); serves != "" {
		fmt.Fprintf(out, "%s serves %s\n\n", ps[0].Name, serves)
	}
	if err := replay.WriteTargets(out, ps[0].Name, rows); err != nil {
		return err
	}
	if ps[0].SimulatorOnly() {
		fmt.Fprintf(out, "%s is simulator only: the agent does not run it\n", ps[0].Name)
	}
	fmt.Fprintf(out, "wall time: %.1f s\n", time.Since(start).Seconds())
	return nil
}
