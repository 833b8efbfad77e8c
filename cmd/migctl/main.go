package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/migpro/migpro/internal/buildinfo"
)

// command is one migctl subcommand. Its run function defines its flags on a
// standard FlagSet and calls parseFlags before anything else; root.go learns
// the flags from a describe pass, so cobra parses, checks and documents them.
// run returns an error to print as one line; a usageError exits with 2.
type command struct {
	summary string
	run     func(args []string, stdout io.Writer) error
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string, stdout io.Writer) error) {
	if _, dup := commands[name]; dup {
		panic("migctl: duplicate command " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

// usageError marks bad input: the command prints it and exits 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func main() { os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr)) }

// runMain runs migctl with args and returns its exit code: 0, 1 for a
// failure, 2 for bad usage.
func runMain(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var ec exitError
	if errors.As(err, &ec) {
		if ec.err != nil {
			fmt.Fprintf(stderr, "migctl %s: %v\n", cmd.Name(), oneLine(ec.err))
		}
		return ec.code
	}
	name := "migctl"
	if cmd != nil && cmd != root {
		name += " " + cmd.Name()
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, oneLine(err))
	var u usageError
	var r runError
	if errors.As(err, &u) || !errors.As(err, &r) {
		return 2 // bad input, or cobra refused the command line
	}
	return 1
}

// runError marks an error returned by a command's run function, so that
// runMain tells it from cobra's own refusals of the command line.
type runError struct{ err error }

func (r runError) Error() string { return r.err.Error() }
func (r runError) Unwrap() error { return r.err }

func oneLine(err error) string { return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ") }

// describing is set during root.go's describe pass: parseFlags then hands
// the command's FlagSet back instead of parsing.
var describing bool

// described carries a command's FlagSet out of its run function, as a
// panic that describe recovers, so that no command can swallow it.
type described struct{ fs *flag.FlagSet }

// parseFlags parses a subcommand's flags, turning flag errors into usage
// errors so they exit 2 with one line. In the describe pass it hands the
// FlagSet to describe instead, and the command goes no further.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if describing {
		panic(described{fs})
	}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	return nil
}

// noArgs refuses positional arguments of a command that takes none.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() != 0 {
		return usagef("takes no arguments, got %q", fs.Args())
	}
	return nil
}

func init() {
	register("version", "print migctl's version from its build information", func(args []string, stdout io.Writer) error {
		fs := flag.NewFlagSet("version", flag.ContinueOnError)
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if err := noArgs(fs); err != nil {
			return err
		}
		fmt.Fprintln(stdout, buildinfo.Read().Line("migctl"))
		return nil
	})
}
