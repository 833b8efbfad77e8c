package ctl

import (
	"os"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/record"
)

// NewSimNode makes a simulated node whose device files live in a temporary
// directory that cleanup removes, logging to log. A bad spec is a UsageError.
func NewSimNode(spec string, seed int64, log logrus.FieldLogger) (*simgpu.Node, func(), error) {
	if _, err := simgpu.ParseSpec(spec); err != nil {
		return nil, nil, UsageError{err}
	}
	dir, err := os.MkdirTemp("", "migctl-sim-")
	if err != nil {
		return nil, nil, err
	}
	node, err := simgpu.NewNode(spec, simgpu.WithSeed(seed), simgpu.WithRoot(dir), simgpu.WithLogger(log))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return node, func() { node.Close(); os.RemoveAll(dir) }, nil
}

// SimulatedDriver installs the simulated driver, with one instance of
// profile on a simulated GPU of model, for --simulate. simDriver is
// --sim-driver: the stubs' directory, or Auto to find simdriver/ beside the
// binary. A bad model or profile is a UsageError.
func SimulatedDriver(model, profile, simDriver string) (*record.Sim, error) {
	dir, err := FindBeside(simDriver, "simdriver", "--sim-driver", "build the stubs with `make simdriver`, or pass --sim-driver DIR")
	if err != nil {
		return nil, err
	}
	sim, err := record.Simulate(model, profile, dir, quietlog.New())
	if err != nil {
		return nil, Usagef("%v", err)
	}
	return sim, nil
}
