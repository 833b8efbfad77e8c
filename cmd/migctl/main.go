package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/internal/ctl"
)

func main() { os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr)) }

// runMain runs migctl with args and returns its exit code: 0, 1 for a
// failure, 2 for bad usage.
func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && movedToLab[args[0]] {
		fmt.Fprintf(stderr, "migctl: %q moved to migpro-lab: run migpro-lab replay %s (docs/replay.md)\n", args[0], strings.Join(args[1:], " "))
		return 2
	}
	return ctl.Execute(newRootCmd(), args, stdout, stderr)
}

// movedToLab are migctl's old names of `migpro-lab replay`: asked for, they
// name the command to run instead, arguments and all.
var movedToLab = map[string]bool{"replay": true, "simulate": true}

// newRootCmd is migctl with every subcommand. Each subcommand owns its
// flags, bound to its options struct; only the commands that talk to the
// agent have --socket and --timeout, and only those that print JSON have
// --output.
func newRootCmd() *cobra.Command {
	return ctl.NewRootCmd("migctl",
		"Talk to the local migpro agent and try its placement and prediction offline",
		`migctl gets and frees MIG instances from the local migpro agent, shows its GPUs and
the containers' memory, and tries the partitioner, the estimator and the predictor
offline on simulated GPUs and recorded traces. The demo, the workload replay,
run's containerd client and the CDI spec preview (cdi-spec) live in migpro-lab.`,
		newAllocCmd(), newFreeCmd(), newStatusCmd(), newTopCmd(),
		newPlanCmd(), newPredictCmd(), newEstimateCmd(), newRecordCmd(), newDoctorCmd())
}
