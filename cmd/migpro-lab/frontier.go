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

// runFrontier is `migpro-lab replay --targets --sweep-reserve-after LIST`:
// the agent's reservation rule at each limit in LIST, in migpro's place, on
// every configuration of the targets, with the baselines on the same axes
// (replay.Frontier); with --plot DIR it also draws frontier.png there.
func (opt *replayOptions) runFrontier(cmd *cobra.Command, seeds []uint64) error {
	points, err := replay.ParseFrontierPoints(opt.sweepReserve)
	if err != nil {
		return ctl.Usagef("--sweep-reserve-after: %v", err)
	}
	who := "migpro with the agent's --reserve-after"
	if cmd.Flags().Changed("policies") {
		switch strings.TrimSpace(opt.policyList) {
		case "migpro":
		case "migpro/exact":
			points = replay.ForPods(points)
			who = "migpro/exact (pods) with the agent's rule for local callers, simulator only where it reserves,"
		default:
			return ctl.Usagef("--sweep-reserve-after sweeps the rule of migpro (local callers) or migpro/exact (pods, simulator only); --policies %q is neither", opt.policyList)
		}
	}
	start := time.Now()
	errw := cmd.ErrOrStderr()
	all, err := replay.Frontier(replay.TargetConfigs(opt.openbDir), seeds, points, func(c string) {
		fmt.Fprintf(errw, "frontier: %s (%.0f s)\n", c, time.Since(start).Seconds())
	})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "reservation frontier: %s at %s, seeds %v (%s), against %s\n\n",
		who, strings.Join(labels(points), ", "), seeds, replay.SeedSetName(opt.seeds), strings.Join(replay.TargetBaselines, ", "))
	if err := replay.WriteFrontier(out, all); err != nil {
		return err
	}
	if opt.plotDir != "" {
		if err := os.MkdirAll(opt.plotDir, 0o755); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		path := filepath.Join(opt.plotDir, "frontier.png")
		title := fmt.Sprintf("reservation frontier, %d configurations, seeds %v (%s)", len(all[0].Rows), seeds, replay.SeedSetName(opt.seeds))
		if err := replay.PlotFrontier(path, title, all); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nchart: %s\n", path)
	}
	fmt.Fprintf(out, "wall time: %.1f s\n", time.Since(start).Seconds())
	return nil
}

func labels(points []replay.FrontierPoint) []string {
	out := make([]string, len(points))
	for i, p := range points {
		out[i] = p.Label
	}
	return out
}
