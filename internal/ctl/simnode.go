package ctl

import (
	"os"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
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

// QuietLogger discards what the partitioner and the agent log while a
// command narrates on its own: internal/quietlog's logger, kept for the
// callers not yet moved to it.
func QuietLogger() logrus.FieldLogger { return quietlog.New() }
