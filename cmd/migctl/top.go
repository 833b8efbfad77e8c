package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

func init() {
	register("top", "live per-container GPU memory", runTop)
}

const topUsage = "usage: migctl top [--socket PATH] [--output text|json] [--watch INTERVAL [--count N]]"

func runTop(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	socket := fs.String("socket", defaultSocket, "the agent's local API socket")
	output := fs.String("output", "text", "text or json")
	timeout := fs.Duration("timeout", 5*time.Second, "bound on each request")
	watch := fs.Duration("watch", 0, "refresh every INTERVAL until interrupted (0: once)")
	count := fs.Int("count", 0, "with --watch, stop after N refreshes (0: never)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *watch < 0 || *count < 0 || (*count > 0 && *watch == 0) {
		return usagef("--watch must be positive and --count needs --watch; %s", topUsage)
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments %q; %s", fs.Args(), topUsage)
	}
	if *output != "text" && *output != "json" {
		return usagef("--output %q: want text or json", *output)
	}
	client := client.New(*socket)
	enc := json.NewEncoder(stdout)
	for i := 1; ; i++ {
		top, err := fetchTop(client, *socket, *timeout)
		if err != nil {
			return err
		}
		if *output == "json" {
			// One JSON document per line, so a watch stream is JSON Lines.
			err = enc.Encode(top)
		} else {
			if *watch > 0 {
				fmt.Fprintf(stdout, "%s\n", time.Now().Format(time.TimeOnly))
			}
			err = writeTopText(stdout, top, time.Now())
		}
		if err != nil || *watch == 0 || (*count > 0 && i >= *count) {
			return err
		}
		time.Sleep(*watch)
		if *output == "text" {
			fmt.Fprintln(stdout)
		}
	}
}

// fetchTop asks the agent for GET /v1/top, each request bounded by timeout.
func fetchTop(c *client.Client, socket string, timeout time.Duration) (telemetryapi.Top, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	top, err := c.Top(ctx)
	var ue *url.Error
	if errors.As(err, &ue) {
		// The request never got an answer: keep top's hint.
		return top, fmt.Errorf("asking the agent at %s (is migpro-agent running?): %w", socket, ue)
	}
	return top, err
}

func writeTopText(w io.Writer, top telemetryapi.Top, now time.Time) error {
	if len(top.Containers) == 0 {
		_, err := fmt.Fprintln(w, "no containers registered for telemetry")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tPOD\tMIG\tCURRENT\tPEAK\tCAPACITY\tUSE\tSOURCE\tSAMPLES\tLAST")
	for _, e := range top.Containers {
		id := e.ID
		if len(id) > 12 {
			id = id[:12]
		}
		pod := "-"
		if e.PodName != "" {
			pod = e.PodNamespace + "/" + e.PodName
			if e.ContainerName != "" {
				pod += "/" + e.ContainerName
			}
		}
		mig := "-"
		if len(e.MIGUUIDs) > 0 {
			mig = strings.Join(e.MIGUUIDs, ",")
		}
		use, last, src := "-", "never", "-"
		if e.CapacityBytes > 0 {
			use = fmt.Sprintf("%.0f%%", 100*float64(e.CurrentBytes)/float64(e.CapacityBytes))
		}
		if e.LastSample != nil {
			last = now.Sub(*e.LastSample).Round(100*time.Millisecond).String() + " ago"
		}
		if e.Source != "" {
			src = string(e.Source)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", id, pod, mig,
			humanBytes(e.CurrentBytes), humanBytes(e.PeakBytes), humanBytes(e.CapacityBytes), use, src, e.Samples, last)
	}
	return tw.Flush()
}

// humanBytes prints binary units with one decimal.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
