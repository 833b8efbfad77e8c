package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/migpro/migpro/internal/buildinfo"
)

// command is one migctl subcommand. run returns an error to print as one
// line; a usageError exits with status 2.
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

func runMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args[0] = "version"
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "migctl: unknown command %q (run 'migctl help')\n", args[0])
		return 2
	}
	if err := cmd.run(args[1:], stdout); err != nil {
		var h helpShown
		if errors.As(err, &h) {
			fmt.Fprint(stdout, h.usage)
			return 0
		}
		fmt.Fprintf(stderr, "migctl %s: %v\n", args[0], err)
		var u usageError
		if errors.As(err, &u) {
			return 2
		}
		return 1
	}
	return 0
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: migctl COMMAND [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// parseFlags parses a subcommand's flags, turning flag errors into usage errors
// so they exit 2 with one line.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		var b strings.Builder
		fmt.Fprintf(&b, "Usage: migctl %s [flags]", fs.Name())
		if c, ok := commands[fs.Name()]; ok {
			fmt.Fprintf(&b, "\n\n%s", c.summary)
		}
		b.WriteString("\n\nFlags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		return helpShown{b.String()}
	}
	if err != nil {
		return usageError{err}
	}
	return nil
}

// helpShown is returned by parseFlags on -h/--help: runMain prints usage to
// stdout and exits 0.
type helpShown struct{ usage string }

func (h helpShown) Error() string { return "help requested" }

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
