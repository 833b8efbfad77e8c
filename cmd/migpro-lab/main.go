package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/internal/ctl"
)

func main() { os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr)) }

// runMain runs migpro-lab with args and returns its exit code: 0, 1 for a
// failure, 2 for bad usage.
func runMain(args []string, stdout, stderr io.Writer) int {
	return ctl.Execute(newRootCmd(), args, stdout, stderr)
}

func newRootCmd() *cobra.Command {
	return ctl.NewRootCmd("migpro-lab",
		"Watch migpro place and move work: the demo, workload replays, migpro-lab run and the CDI spec preview",
		`migpro-lab runs the demo, replays workloads under several placement policies on
simulated nodes (with charts), and runs a containerd container that moves to a
larger MIG instance before it runs out of memory; cdi-spec prints the CDI spec the
agent would write for this node's driver, writing nothing. The node tool is migctl.`,
		newDemoCmd(), newReplayCmd(), newRunCmd(), newCDISpecCmd())
}
