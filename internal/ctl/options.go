package ctl

import (
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/migpro/migpro/defaults"
)

// Environment variables that set the defaults of --timeout and --output.
const (
	EnvTimeout = "MIGPRO_TIMEOUT"
	EnvOutput  = "MIGPRO_OUTPUT"
)

// AgentOptions are the flags of a command that talks to the local agent.
type AgentOptions struct {
	Socket  string
	Timeout time.Duration
}

// AddFlags defines --socket and --timeout; timeout is the command's own
// default, which MIGPRO_TIMEOUT replaces. With timeout 0 the command has
// no --timeout.
func (o *AgentOptions) AddFlags(fs *pflag.FlagSet, timeout time.Duration) {
	fs.StringVar(&o.Socket, "socket", envOr(defaults.EnvSocket, defaults.AgentSocket),
		"the agent's local API socket (env "+defaults.EnvSocket+")")
	if timeout == 0 {
		return
	}
	fs.DurationVar(&o.Timeout, "timeout", timeout, "how long to wait for the agent, positive (env "+EnvTimeout+")")
}

// Complete applies MIGPRO_TIMEOUT when --timeout was not given, and checks
// the timeout.
func (o *AgentOptions) Complete(fs *pflag.FlagSet) error {
	if fs.Lookup("timeout") == nil {
		return nil
	}
	if !fs.Changed("timeout") {
		if v := os.Getenv(EnvTimeout); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return Usagef("%s=%q: %v", EnvTimeout, v, err)
			}
			o.Timeout = d
		}
	}
	if o.Timeout <= 0 {
		return Usagef("--timeout must be positive, not %s", o.Timeout)
	}
	return nil
}

// OutputOptions is --output, for the commands that can print JSON.
type OutputOptions struct{ Format string }

// AddFlags defines --output (-o).
func (o *OutputOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Format, "output", "o", "text", "output format, text or json (env "+EnvOutput+")")
}

// AddFlagsTo is AddFlags on cmd, with completion of the formats.
func (o *OutputOptions) AddFlagsTo(cmd *cobra.Command) {
	o.AddFlags(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("output", Words("text", "json"))
}

// Complete applies MIGPRO_OUTPUT when --output was not given, and checks
// the format.
func (o *OutputOptions) Complete(fs *pflag.FlagSet) error {
	if !fs.Changed("output") {
		if v := os.Getenv(EnvOutput); v != "" {
			if v != "text" && v != "json" {
				return Usagef("%s=%q: want text or json", EnvOutput, v)
			}
			o.Format = v
		}
	}
	if o.Format != "text" && o.Format != "json" {
		return Usagef("--output %q: want text or json", o.Format)
	}
	return nil
}

// JSON reports whether the output is JSON.
func (o OutputOptions) JSON() bool { return o.Format == "json" }

// WriteJSON writes v as indented JSON: the one style of every --output json.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
