package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/internal/ctl"
)

func main() { os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr)) }

// runMain runs migctl with args and returns its exit code: 0, 1 for a
// failure, 2 for bad usage.
func runMain(args []string, stdout, stderr io.Writer) int {
	return ctl.Execute(newRootCmd(), args, stdout, stderr)
}

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
