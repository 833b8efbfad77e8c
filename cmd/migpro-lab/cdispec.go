package main

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/cdi"
	"github.com/migpro/migpro/doctor/cdispec"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/internal/quietlog"
)

type cdiSpecOptions struct {
	out                           ctl.OutputOptions
	simulate, profile, simDriver  string
	driverRoot, devRoot, hookPath string
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
		Example: "  migpro-lab cdi-spec\n  migpro-lab cdi-spec --output json > spec.json\n  migpro-lab cdi-spec --simulate a100-40gb --profile 3g.20gb",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.out.Complete(cmd.Flags()); err != nil {
				return err
			}
			so := cdispec.Options{DriverRoot: o.driverRoot, DevRoot: o.devRoot, HookPath: o.hookPath, Log: quietlog.New()}
			if o.simulate != "" {
				sim, err := ctl.SimulatedDriver(o.simulate, o.profile, o.simDriver)
				if err != nil {
					return err
				}
				defer sim.Close()
				paths := sim.Paths()
				so.NVML, so.DriverRoot, so.DevRoot, so.Paths = sim.Lib(), sim.Root(), filepath.Dir(paths.DevDir), &paths
			} else {
				so.DeviceEdits = true // as the agent does on a real driver
			}
			r, err := cdispec.Make(so)
			if err != nil {
				return err
			}
			if o.out.JSON() {
				return ctl.WriteJSON(cmd.OutOrStdout(), r)
			}
			return r.WriteText(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.out.AddFlagsTo(cmd)
	f.StringVar(&o.driverRoot, "driver-root", cdi.DefaultDriverRoot, "root of the NVIDIA driver's files")
	f.StringVar(&o.devRoot, "dev-root", "", "directory holding dev/ (default: the driver root)")
	f.StringVar(&o.hookPath, "nvidia-cdi-hook-path", cdi.DefaultNVIDIACDIHookPath, "host path of nvidia-cdi-hook named in the hooks")
	f.StringVar(&o.simulate, "simulate", "", "use a simulated GPU of this model")
	f.StringVar(&o.profile, "profile", "", "with --simulate, the instance's MIG profile (default: the whole GPU)")
	f.StringVar(&o.simDriver, "sim-driver", ctl.Auto, "with --simulate, the simulated driver's stubs (make simdriver); \"auto\": simdriver/ beside migpro-lab, or ../lib/migpro/simdriver")
	return cmd
}
