package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/migpro/migpro/hook"
	"github.com/migpro/migpro/internal/cli"
)

var lineBreaks = strings.NewReplacer("\n", `\n`, "\r", `\r`)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stderr)) }

func run(args []string, stdin io.Reader, stderr io.Writer) int {
	fs := flag.NewFlagSet("migpro-hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := hook.Config{}
	fs.StringVar(&cfg.AgentSocket, "agent-socket", hook.DefaultAgentSocket, "the agent's local API socket")
	fs.DurationVar(&cfg.Timeout, "timeout", 2*time.Second, "bound on talking to the agent")
	fs.BoolVar(&cfg.FailClosed, "fail-closed", false, "refuse to start the container when telemetry cannot be set up")
	fs.StringVar(&cfg.ShimHostPath, "shim", "", "host path of libmigpro-shim.so to mount at "+hook.ContainerShim+" (hooks.d without CDI)")
	fs.Func(strings.TrimPrefix(hook.FlagInstance, "--"), "a MIG UUID the CDI spec running this hook injects (repeatable; set by the agent's specs)", func(v string) error {
		if !strings.HasPrefix(v, "MIG-") {
			return fmt.Errorf("%q is not a MIG UUID", v)
		}
		cfg.Instances = append(cfg.Instances, v)
		return nil
	})
	logFile := fs.String("log-file", "", "also append log lines to this file (runtimes drop a successful hook's stderr)")
	if code, done := cli.ParseTo(fs, args, os.Stdout, stderr); done {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "migpro-hook: at most one stage argument, got %q\n", fs.Args())
		return 2
	}
	cfg.Stage = fs.Arg(0)
	cfg.Logf = func(format string, a ...any) {
		// Paths and ids are quoted where they are formatted; this is the
		// last guard: one call, one line.
		line := lineBreaks.Replace(fmt.Sprintf(format, a...))
		fmt.Fprintln(stderr, line)
		if *logFile != "" {
			if f, err := os.OpenFile(*logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o640); err == nil {
				fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339), line)
				_ = f.Close()
			}
		}
	}
	if _, err := hook.Run(cfg, stdin); err != nil {
		cfg.Logf("migpro-hook: %v", err)
		return 1
	}
	return 0
}
