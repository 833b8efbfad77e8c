package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

const topUsage = "usage: migctl top [--socket PATH] [--output text|json] [--watch INTERVAL [--count N]]"

type topOptions struct {
	agent ctl.AgentOptions
	out   ctl.OutputOptions
	watch time.Duration
	count int
}

func newTopCmd() *cobra.Command {
	o := &topOptions{}
	const short = "live per-container GPU memory"
	cmd := &cobra.Command{
		Use:     "top",
		Short:   short,
		Long:    long(short, "Per container: current and peak GPU memory, the instance's capacity, and the source\n(the shim or NVML)."),
		Example: "  migctl top\n  migctl top --watch 2s\n  migctl top --output json --watch 1s --count 10",
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.watch < 0 || o.count < 0 || (o.count > 0 && o.watch == 0) {
				return ctl.Usagef("--watch must be positive and --count needs --watch; %s", topUsage)
			}
			if len(args) != 0 {
				return ctl.Usagef("unexpected arguments %q; %s", args, topUsage)
			}
			if err := o.out.Complete(cmd.Flags()); err != nil {
				return err
			}
			if err := o.agent.Complete(cmd.Flags()); err != nil {
				return err
			}
			return o.run(cmd.OutOrStdout())
		},
	}
	o.agent.AddFlags(cmd.Flags(), 5*time.Second)
	o.out.AddFlagsTo(cmd)
	cmd.Flags().DurationVar(&o.watch, "watch", 0, "refresh every INTERVAL until interrupted (0: once)")
	cmd.Flags().IntVar(&o.count, "count", 0, "with --watch, stop after N refreshes (0: never)")
	return cmd
}

func (o *topOptions) run(stdout io.Writer) error {
	client := client.New(o.agent.Socket)
	for i := 1; ; i++ {
		top, err := fetchTop(client, o.agent.Socket, o.agent.Timeout)
		if err != nil {
			return err
		}
		if o.out.JSON() {
			// With --watch, one indented document after another, as
			// kubectl get --watch -o json prints them.
			err = ctl.WriteJSON(stdout, top)
		} else {
			if o.watch > 0 {
				fmt.Fprintf(stdout, "%s\n", time.Now().Format(time.TimeOnly))
			}
			err = writeTopText(stdout, top, time.Now())
		}
		if err != nil || o.watch == 0 || (o.count > 0 && i >= o.count) {
			return err
		}
		time.Sleep(o.watch)
		if !o.out.JSON() {
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
