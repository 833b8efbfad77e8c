package ctl

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// UsageError marks bad input: the command prints it and exits 2.
type UsageError struct{ Err error }

func (u UsageError) Error() string { return u.Err.Error() }
func (u UsageError) Unwrap() error { return u.Err }

// Usagef makes a UsageError.
func Usagef(format string, args ...any) error { return UsageError{fmt.Errorf(format, args...)} }

// runError marks an error returned by a command's RunE, so that Execute
// tells it from cobra's own refusals of the command line.
type runError struct{ err error }

func (r runError) Error() string { return r.err.Error() }
func (r runError) Unwrap() error { return r.err }

// Execute runs root with args and returns the exit code: 0, 1 for a
// failure, 2 for bad usage (a UsageError or a command line cobra refused).
// The error goes to stderr as one line headed by the command's path.
func Execute(root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{err} })
	markRunErrors(root)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	name := root.Name()
	if cmd != nil && cmd != root {
		name += " " + cmd.Name()
	}
	// A command that ends with its own status (a recorded program's, a
	// failed report) says so with ExitCode; an empty message adds nothing.
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		if msg := OneLine(err); msg != "" {
			fmt.Fprintf(stderr, "%s: %s\n", name, msg)
		}
		return coded.ExitCode()
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, OneLine(err))
	var u UsageError
	var r runError
	if errors.As(err, &u) || !errors.As(err, &r) {
		return 2
	}
	return 1
}

// markRunErrors wraps every command's RunE so that its errors are told
// apart from cobra's.
func markRunErrors(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := run(cmd, args); err != nil {
				return runError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markRunErrors(sub)
	}
}

// OneLine is err's message on one line.
func OneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}

// NoArgs refuses positional arguments, as bad usage.
func NoArgs(_ *cobra.Command, args []string) error {
	if len(args) != 0 {
		return Usagef("takes no arguments, got %q", args)
	}
	return nil
}
