package ctl

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/internal/buildinfo"
)

// NewVersionCmd is `PROGRAM version`: the version make links in (git
// describe, the images' tag too), the revision and the Go version, as text
// or JSON.
func NewVersionCmd(program string) *cobra.Command {
	var out OutputOptions
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "print " + program + "'s version from its build information",
		Example: "  " + program + " version\n  " + program + " --version\n  " + program + " version --output json",
		Args:    NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Complete(cmd.Flags()); err != nil {
				return err
			}
			if out.JSON() {
				return WriteJSON(cmd.OutOrStdout(), buildinfo.Read())
			}
			fmt.Fprintln(cmd.OutOrStdout(), buildinfo.Read().Line(program))
			return nil
		},
	}
	out.AddFlagsTo(cmd)
	return cmd
}
