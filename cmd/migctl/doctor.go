package main

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/spf13/cobra"

	"github.com/migpro/migpro/doctor"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/record"
)

type doctorOptions struct {
	out      ctl.OutputOptions
	simulate string
	nvmlLib  string
}

func newDoctorCmd() *cobra.Command {
	o := &doctorOptions{}
	const short = "check this node's readiness for migpro, one line per check (read-only)"
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: short,
		Long: short + `.

Checks the NVIDIA driver and its version, NVML, each GPU's MIG capability and its
current and pending MIG mode, the CDI directories, whether containerd, CRI-O or
podman will apply CDI specs, the hooks the specs there name (nvidia-cdi-hook), the
kubelet's device-plugin and PodResources sockets, and whether the agent is running.
A failing or warning check says how to fix it. doctor changes nothing.

Exit codes: 0 when no check failed (warnings allowed), 1 when one failed, 2 for bad
usage. --simulate checks a simulated node's GPUs (the host checks stay this host's).
The CDI spec the agent would write for this node's driver: migpro-lab cdi-spec.`,
		Example: "  migctl doctor\n  migctl doctor --output json\n  migctl doctor --simulate a100-40gb:2",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.out.Complete(cmd.Flags()); err != nil {
				return err
			}
			opts := doctor.Options{NVMLLibrary: o.nvmlLib}
			if o.simulate != "" {
				node, err := simgpu.NewNode(o.simulate, simgpu.WithLogger(quietlog.New()))
				if err != nil {
					return ctl.Usagef("--simulate: %v", err)
				}
				defer node.Close()
				opts.NVML, opts.Simulated = node.Lib(), o.simulate
			} else {
				opts.NVML = nvml.New(nvml.WithLibraryPath(o.nvmlLib))
			}
			r := doctor.Run(opts)
			var err error
			if o.out.JSON() {
				err = r.WriteJSON(cmd.OutOrStdout())
			} else {
				err = r.WriteText(cmd.OutOrStdout())
			}
			if err != nil {
				return err
			}
			if r.Failed() {
				return exitError{code: doctor.ExitFailed}
			}
			return nil
		},
	}
	o.out.AddFlagsTo(cmd)
	cmd.Flags().StringVar(&o.simulate, "simulate", "", "check a simulated node, e.g. a100-40gb:2 (models: "+fmt.Sprint(simgpu.Models())+")")
	cmd.Flags().StringVar(&o.nvmlLib, "nvml-lib", record.NVMLLibrary, "the NVML library to load (a name the loader finds, or a path)")
	return cmd
}
