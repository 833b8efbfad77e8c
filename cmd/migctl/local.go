package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/internal/ctl"
)

// long is a command's help: its summary, then more.
func long(summary, more string) string { return summary + ".\n\n" + more }

type allocOptions struct {
	agent  ctl.AgentOptions
	out    ctl.OutputOptions
	owner  string
	stdout io.Writer
}

func newAllocCmd() *cobra.Command {
	o := &allocOptions{}
	const short = "get a MIG instance from the local agent; prints its CDI name"
	cmd := &cobra.Command{
		Use:   "alloc PROFILE",
		Short: short,
		Long: long(short, "The agent makes the instance if none is idle, writes its CDI spec and holds it for\n"+
			"the caller until `migctl free`. Pass the printed name to podman --device or to a\n"+
			"containerd CDI device."),
		Example: "  migctl alloc 2g.10gb\n" +
			"  podman run --device $(migctl alloc --owner me 1g.10gb) IMAGE\n" +
			"  migctl alloc --output json 1g.5gb",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.agent.Complete(cmd.Flags()); err != nil {
				return err
			}
			if err := o.out.Complete(cmd.Flags()); err != nil {
				return err
			}
			if len(args) != 1 {
				return ctl.Usagef("want exactly one profile, e.g. migctl alloc 2g.20gb")
			}
			o.stdout = cmd.OutOrStdout()
			return o.run(args[0])
		},
	}
	o.agent.AddFlags(cmd.Flags(), time.Minute)
	o.out.AddFlagsTo(cmd)
	cmd.Flags().StringVar(&o.owner, "owner", "", "label of the holder, shown by status")
	cmd.ValidArgsFunction = ctl.CompleteAgentProfiles
	return cmd
}

func (o *allocOptions) run(profile string) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.agent.Timeout)
	defer cancel()
	resp, err := client.New(o.agent.Socket).Alloc(ctx, client.AllocRequest{Profile: profile, Owner: o.owner})
	if err != nil {
		return ctl.AgentErr(err)
	}
	if o.out.JSON() {
		return ctl.WriteJSON(o.stdout, resp)
	}
	fmt.Fprintln(o.stdout, resp.CDIName)
	return nil
}

func newFreeCmd() *cobra.Command {
	var agent ctl.AgentOptions
	const short = "release and destroy an instance got with alloc"
	cmd := &cobra.Command{
		Use:   "free NAME|UUID|ID",
		Short: short,
		Long: long(short, "Releases an instance got with alloc; the agent destroys it unless it keeps it warm.\n"+
			"Name it by the CDI name or MIG UUID alloc printed, or by the start of its UUID\n"+
			"(the 8-character ID status draws in each box)."),
		Example: "  migctl free migpro.dev/mig=MIG-0e5d…\n  migctl free MIG-0e5d…\n  migctl free 0e5d12ab…",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := agent.Complete(cmd.Flags()); err != nil {
				return err
			}
			if len(args) != 1 {
				return ctl.Usagef("want exactly one CDI name, MIG UUID or ID, as printed by migctl alloc or status")
			}
			ctx, cancel := context.WithTimeout(context.Background(), agent.Timeout)
			defer cancel()
			c := client.New(agent.Socket)
			name, err := resolveInstance(ctx, c, args[0])
			if err != nil {
				return err
			}
			err = c.Free(ctx, name)
			if errors.Is(err, client.ErrUnknownInstance) {
				return ctl.UsageError{Err: err}
			}
			return err
		},
	}
	agent.AddFlags(cmd.Flags(), time.Minute)
	return cmd
}

// uuidLen is the length of a MIG UUID, "MIG-" and 36 characters.
const uuidLen = 40

// resolveInstance turns the start of a MIG UUID (with or without "MIG-",
// e.g. the 8 characters status draws) into the one instance's UUID; a CDI
// name or a whole UUID goes to the agent as given.
func resolveInstance(ctx context.Context, c *client.Client, arg string) (string, error) {
	if strings.Contains(arg, "=") || len(arg) >= uuidLen {
		return arg, nil
	}
	prefix := "MIG-" + strings.TrimPrefix(arg, "MIG-")
	st, err := c.Status(ctx)
	if err != nil {
		return "", err
	}
	var found []string
	for _, in := range st.Instances {
		if strings.HasPrefix(in.UUID, prefix) {
			found = append(found, in.UUID)
		}
	}
	switch len(found) {
	case 0:
		return arg, nil // the agent says it has no such instance
	case 1:
		return found[0], nil
	}
	return "", ctl.Usagef("%q is the start of %d instances (%s): give more of the UUID", arg, len(found), strings.Join(found, ", "))
}

func newStatusCmd() *cobra.Command {
	var (
		agent ctl.AgentOptions
		out   ctl.OutputOptions
	)
	const short = "draw the node's GPUs and instances from the local agent"
	cmd := &cobra.Command{
		Use:     "status",
		Short:   short,
		Long:    long(short, "Draws each GPU's slices with the instances on them, and who holds them."),
		Example: "  migctl status\n  migctl status --output json\n  MIGPRO_SOCKET=/tmp/agent.sock migctl status",
		Args:    ctl.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Complete(cmd.Flags()); err != nil {
				return err
			}
			if err := agent.Complete(cmd.Flags()); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), agent.Timeout)
			defer cancel()
			st, err := client.New(agent.Socket).Status(ctx)
			if err != nil {
				return err
			}
			if out.JSON() {
				return ctl.WriteJSON(cmd.OutOrStdout(), st)
			}
			writeStatusText(cmd.OutOrStdout(), st)
			return nil
		},
	}
	agent.AddFlags(cmd.Flags(), 30*time.Second)
	out.AddFlagsTo(cmd)
	return cmd
}

func writeStatusText(w io.Writer, st client.Status) {
	ctl.DrawStatus(w, st)
	for _, in := range st.Instances {
		line := fmt.Sprintf("%-44s %-10s GPU %d slot %d  %-7s", in.UUID, in.Profile, in.GPU, in.Placement.Start, in.State)
		// The holder: the pod the kubelet gave it to, else the local
		// caller's label.
		switch {
		case in.Pod != "":
			line += "  pod " + in.Pod
		case in.Owner != "":
			line += "  " + in.Owner
		}
		if !in.Healthy {
			line += "  UNHEALTHY"
		}
		fmt.Fprintln(w, line)
	}
}
