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

// NewRootCmd is program's root command, as migctl and migpro-lab share it:
// --version and the version subcommand print the build information, and
// without a subcommand it prints its help to stderr and exits 2. cmds are
// its subcommands; the version subcommand is added last.
func NewRootCmd(program, short, long string, cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:     program,
		Short:   short,
		Long:    long,
		Version: buildinfo.Read().Line(program),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Help()
			return Usagef("no command given")
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(cmds...)
	root.AddCommand(NewVersionCmd(program))
	return root
}
