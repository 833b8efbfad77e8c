package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/internal/buildinfo"
)

// Environment variables that set the global flags' defaults.
const (
	envTimeout = "MIGPRO_TIMEOUT"
	envOutput  = "MIGPRO_OUTPUT"
)

// globals are the flags every command shares, defined once on the root.
type globals struct {
	socket  string
	timeout time.Duration
	output  string
	// timeoutSet and outputSet: given by flag or environment, so passed to
	// the command; otherwise the command's own default applies.
	timeoutSet, outputSet bool
}

// globalNames are the flags of globals; a command that has one gets the
// global value.
var globalNames = []string{"socket", "timeout", "output"}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	var g globals
	root := &cobra.Command{
		Use:   "migctl",
		Short: "Talk to the migpro agent and try its placement and prediction offline",
		Long: `migctl gets and frees MIG instances from the local migpro agent, shows its GPUs and
the containers' memory, runs a container that moves to a larger instance before it
runs out of memory, and tries the partitioner and the predictor on simulated GPUs.`,
		Version:       buildinfo.Read().Line("migctl"),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Help()
			return usagef("no command given")
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return g.resolve(cmd) },
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.socket, "socket", envOr(defaults.EnvSocket, defaults.AgentSocket),
		"the agent's local API socket (env "+defaults.EnvSocket+")")
	pf.DurationVar(&g.timeout, "timeout", 0, "how long to wait for the agent, positive (env "+envTimeout+"; default: the command's)")
	pf.StringVar(&g.output, "output", "text", "output format, text or json (env "+envOutput+")")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		root.AddCommand(subcommand(n, commands[n], &g))
	}
	for _, c := range []*cobra.Command{newRecordCmd(), newDoctorCmd()} {
		markRun(c)
		root.AddCommand(c)
	}
	return root
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// resolve applies the environment to the globals the command line left
// unset, and checks them.
func (g *globals) resolve(cmd *cobra.Command) error {
	flags := cmd.Flags()
	g.timeoutSet = flags.Changed("timeout")
	if !g.timeoutSet {
		if v := os.Getenv(envTimeout); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return usagef("%s=%q: %v", envTimeout, v, err)
			}
			g.timeout, g.timeoutSet = d, true
		}
	}
	g.outputSet = flags.Changed("output")
	if !g.outputSet {
		if v := os.Getenv(envOutput); v != "" {
			if v != "text" && v != "json" {
				return usagef("%s=%q: want text or json", envOutput, v)
			}
			g.output, g.outputSet = v, true
		}
	}
	return nil
}

// subcommand makes the cobra command for a registered command: its flags,
// learnt by describe, are parsed by cobra; the run function then gets them
// back as "--name=value" arguments, with the globals it defines.
func subcommand(name string, c command, g *globals) *cobra.Command {
	fs := describe(name, c)
	doc := docs[name]
	var rec []string // the command's own flags, as given, in order
	sub := &cobra.Command{
		Use:     name + doc.args,
		Short:   c.summary,
		Long:    strings.TrimSpace(c.summary + ".\n\n" + doc.long),
		Example: doc.example,
		Aliases: doc.aliases,
		RunE: func(cmd *cobra.Command, args []string) error {
			var raw []string
			for _, gn := range globalNames {
				global := cmd.Flags().Lookup(gn)
				given := global != nil && cmd.Flags().Changed(gn)
				if fs.Lookup(gn) == nil {
					if given {
						return usagef("%s has no --%s", name, gn)
					}
					continue
				}
				switch {
				case gn == "socket":
					raw = append(raw, "--socket="+g.socket)
				case gn == "timeout" && g.timeoutSet:
					raw = append(raw, "--timeout="+g.timeout.String())
				case gn == "output" && g.outputSet:
					raw = append(raw, "--output="+g.output)
				}
			}
			raw = append(append(append(raw, rec...), "--"), args...)
			if err := c.run(raw, cmd.OutOrStdout()); err != nil {
				return runError{err}
			}
			return nil
		},
	}
	fs.VisitAll(func(f *flag.Flag) {
		for _, gn := range globalNames {
			if f.Name == gn {
				return
			}
		}
		pf := pflag.PFlagFromGoFlag(f)
		pf.Value = recorder{Value: pf.Value, name: f.Name, out: &rec}
		sub.Flags().AddFlag(pf)
	})
	// run passes everything after the image to the container.
	sub.Flags().SetInterspersed(name != "run")
	return sub
}

// recorder keeps every value cobra sets on a command's flag, in order, so
// that repeated flags (run --env) reach the command as given.
type recorder struct {
	pflag.Value
	name string
	out  *[]string
}

func (r recorder) Set(v string) error {
	if err := r.Value.Set(v); err != nil {
		return err
	}
	*r.out = append(*r.out, "--"+r.name+"="+v)
	return nil
}

// describe returns the FlagSet a command's run function defines, by running
// it in describe mode up to its parseFlags call.
func describe(name string, c command) (fs *flag.FlagSet) {
	describing = true
	defer func() {
		describing = false
		d, ok := recover().(described)
		if !ok {
			panic(fmt.Sprintf("migctl %s: run did not call parseFlags first", name))
		}
		fs = d.fs
	}()
	_ = c.run(nil, io.Discard)
	return nil
}
