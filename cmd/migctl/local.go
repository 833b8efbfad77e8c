package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/defaults"
)

func init() {
	register("alloc", "get a MIG instance from the local agent; prints its CDI name", runAlloc)
	register("free", "release and destroy an instance got with alloc", runFree)
	register("status", "draw the node's GPUs and instances from the local agent", runStatus)
}

const defaultSocket = defaults.AgentSocket

func agentFlags(fs *flag.FlagSet) (*string, *string) {
	def := defaultSocket
	if env := os.Getenv(defaults.EnvSocket); env != "" {
		def = env
	}
	socket := fs.String("socket", def, "the agent's local API socket (env "+defaults.EnvSocket+")")
	output := fs.String("output", "text", "output format: text or json")
	return socket, output
}

// timeoutFlag is how long to wait for the agent; parseTimeout refuses a value
// that is not positive as bad usage.
func timeoutFlag(fs *flag.FlagSet, def time.Duration) *time.Duration {
	return fs.Duration("timeout", def, "how long to wait for the agent (positive)")
}

func checkTimeout(d time.Duration) error {
	if d <= 0 {
		return usagef("--timeout must be positive, not %s", d)
	}
	return nil
}

// agentErr turns the agent's refusal of bad input into a usage error (exit 2).
func agentErr(err error) error {
	var bad *client.BadRequestError
	if errors.As(err, &bad) {
		return usageError{err}
	}
	return err
}

func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return usagef("--output must be text or json, not %q", output)
	}
	return nil
}

func runAlloc(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("alloc", flag.ContinueOnError)
	socket, output := agentFlags(fs)
	owner := fs.String("owner", "", "label of the holder, shown by status")
	timeout := timeoutFlag(fs, time.Minute)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkTimeout(*timeout); err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want exactly one profile, e.g. migctl alloc 2g.20gb")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	resp, err := client.New(*socket).Alloc(ctx, client.AllocRequest{Profile: fs.Arg(0), Owner: *owner})
	if err != nil {
		return agentErr(err)
	}
	if *output == "json" {
		return json.NewEncoder(stdout).Encode(resp)
	}
	fmt.Fprintln(stdout, resp.CDIName)
	return nil
}

func runFree(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("free", flag.ContinueOnError)
	socket, _ := agentFlags(fs)
	timeout := timeoutFlag(fs, time.Minute)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkTimeout(*timeout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want exactly one CDI name or MIG UUID, as printed by migctl alloc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	err := client.New(*socket).Free(ctx, fs.Arg(0))
	if errors.Is(err, client.ErrUnknownInstance) {
		return usageError{err}
	}
	return err
}

func runStatus(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	socket, output := agentFlags(fs)
	timeout := timeoutFlag(fs, 30*time.Second)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	if err := checkTimeout(*timeout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	st, err := client.New(*socket).Status(ctx)
	if err != nil {
		return err
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	drawStatus(stdout, st)
	for _, in := range st.Instances {
		line := fmt.Sprintf("%-44s %-10s GPU %d slot %d  %-7s", in.UUID, in.Profile, in.GPU, in.Placement.Start, in.State)
		if in.Owner != "" {
			line += "  " + in.Owner
		}
		if in.Pod != "" {
			line += "  pod " + in.Pod
		}
		if !in.Healthy {
			line += "  UNHEALTHY"
		}
		fmt.Fprintln(stdout, line)
	}
	return nil
}
