package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/spf13/cobra"

	"github.com/migpro/migpro/cdi"
	"github.com/migpro/migpro/doctor"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/record"
)

type doctorOptions struct {
	output   string
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
usage. --simulate checks a simulated node's GPUs (the host checks stay this host's).`,
		Example: "  migctl doctor\n  migctl doctor --output json\n  migctl doctor --simulate a100-40gb:2",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := ctl.OutputOptions{Format: o.output}
			if err := out.Complete(cmd.Flags()); err != nil {
				return err
			}
			o.output = out.Format
			opts := doctor.Options{NVMLLibrary: o.nvmlLib}
			if o.simulate != "" {
				node, err := simgpu.NewNode(o.simulate, simgpu.WithLogger(ctl.QuietLogger()))
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
			if o.output == "json" {
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
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format, text or json (env "+ctl.EnvOutput+")")
	cmd.Flags().StringVar(&o.simulate, "simulate", "", "check a simulated node, e.g. a100-40gb:2 (models: "+fmt.Sprint(simgpu.Models())+")")
	cmd.Flags().StringVar(&o.nvmlLib, "nvml-lib", record.NVMLLibrary, "the NVML library to load (a name the loader finds, or a path)")
	cmd.AddCommand(newCDISpecCmd())
	return cmd
}

type cdiSpecOptions struct {
	output, simulate, profile, simDriver string
	driverRoot, devRoot, hookPath        string
}

func newCDISpecCmd() *cobra.Command {
	o := &cdiSpecOptions{}
	const short = "print the CDI spec the agent would write for this node's driver, writing nothing"
	cmd := &cobra.Command{
		Use:   "cdi-spec",
		Short: short,
		Long: short + `.

The driver's common edits nvcdi finds under the driver root (libraries, binaries,
firmware, device nodes and hooks), and the full spec of every MIG instance that
exists, made by the agent's CDI code in a temporary directory. Nothing is written to
/etc/cdi or /var/run/cdi and no GPU setting changes. With --simulate the driver is the
simulated one, installed under a temporary root with one instance (--profile).`,
		Example: "  migctl doctor cdi-spec\n  migctl doctor cdi-spec --output json > spec.json\n  migctl doctor cdi-spec --simulate a100-40gb --profile 3g.20gb",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := ctl.OutputOptions{Format: o.output}
			if err := out.Complete(cmd.Flags()); err != nil {
				return err
			}
			o.output = out.Format
			so := doctor.SpecOptions{DriverRoot: o.driverRoot, DevRoot: o.devRoot, HookPath: o.hookPath, Log: ctl.QuietLogger()}
			if o.simulate != "" {
				dir, err := findBeside(o.simDriver, "simdriver", "--sim-driver", "build the stubs with `make simdriver`, or pass --sim-driver DIR")
				if err != nil {
					return err
				}
				sim, err := record.Simulate(o.simulate, o.profile, dir, ctl.QuietLogger())
				if err != nil {
					return ctl.Usagef("%v", err)
				}
				defer sim.Close()
				paths := sim.Paths()
				so.NVML, so.DriverRoot, so.DevRoot, so.Paths = sim.Lib(), sim.Root(), filepath.Dir(paths.DevDir), &paths
			} else {
				so.DeviceEdits = true // as the agent does on a real driver
			}
			r, err := doctor.Spec(so)
			if err != nil {
				return err
			}
			if o.output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return r.WriteText(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "text", "output format, text or json (env "+ctl.EnvOutput+")")
	f.StringVar(&o.driverRoot, "driver-root", cdi.DefaultDriverRoot, "root of the NVIDIA driver's files")
	f.StringVar(&o.devRoot, "dev-root", "", "directory holding dev/ (default: the driver root)")
	f.StringVar(&o.hookPath, "nvidia-cdi-hook-path", cdi.DefaultNVIDIACDIHookPath, "host path of nvidia-cdi-hook named in the hooks")
	f.StringVar(&o.simulate, "simulate", "", "use a simulated GPU of this model")
	f.StringVar(&o.profile, "profile", "", "with --simulate, the instance's MIG profile (default: the whole GPU)")
	f.StringVar(&o.simDriver, "sim-driver", auto, "with --simulate, the simulated driver's stubs (make simdriver); \"auto\": beside migctl")
	return cmd
}
