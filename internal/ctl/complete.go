package ctl

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/gpu/simgpu"
)

// CompleteModels completes a GPU model name (--gpu), or the last term of a
// node spec such as a100-40gb:2,h1 (--simulate).
func CompleteModels(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	done := ""
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done = toComplete[:i+1]
	}
	var out []string
	for _, m := range simgpu.Models() {
		out = append(out, done+m)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// ModelProfiles are the profiles the models of spec offer, or every
// simulated model's when spec is empty or unreadable, without repeats.
func ModelProfiles(spec string) []string {
	models := simgpu.Models()
	if mcs, err := simgpu.ParseSpec(spec); err == nil {
		models = models[:0:0]
		for _, mc := range mcs {
			models = append(models, mc.Model)
		}
	}
	var out []string
	for _, m := range models {
		profs, err := simgpu.ModelProfiles(m)
		if err != nil {
			continue
		}
		for _, p := range profs {
			if !slices.Contains(out, p.Name) {
				out = append(out, p.Name)
			}
		}
	}
	return out
}

// Words completes one of a fixed list.
func Words(words ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return words, cobra.ShellCompDirectiveNoFileComp
	}
}

// CompleteAgentProfiles completes the profiles the agent at the command's
// --socket offers; nothing when it does not answer within two seconds.
func CompleteAgentProfiles(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	socket, err := cmd.Flags().GetString("socket")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	profs, err := client.New(socket).Profiles(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return profs, cobra.ShellCompDirectiveNoFileComp
}
