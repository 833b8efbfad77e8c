package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/migpro/migpro/internal/buildinfo"
)

// Parse parses args into fs for the program named fs.Name(), exiting the
// process on --help, --version and bad flags.
func Parse(fs *flag.FlagSet, args []string) {
	if code, done := ParseTo(fs, args, os.Stdout, os.Stderr); done {
		os.Exit(code)
	}
}

// ParseTo is Parse writing to the given streams. done reports that the program
// must exit now with code.
func ParseTo(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	name := fs.Name()
	version := fs.Lookup("version") == nil
	var showVersion bool
	if version {
		fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, "Usage: %s [flags]\n\nFlags:\n", name)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		return 0, true
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v (run '%s --help')\n", name, err, name)
		return 2, true
	case showVersion:
		fmt.Fprintln(stdout, buildinfo.Read().Line(name))
		return 0, true
	}
	return 0, false
}
