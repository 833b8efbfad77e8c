package ctl

import (
	"os"

	"github.com/migpro/migpro/gpu/simgpu"
)

// NewSimNode makes a simulated node whose device files live in a temporary
// directory that cleanup removes. A bad spec is a UsageError.
func NewSimNode(spec string, seed int64) (*simgpu.Node, func(), error) {
	if _, err := simgpu.ParseSpec(spec); err != nil {
		return nil, nil, UsageError{err}
	}
	dir, err := os.MkdirTemp("", "migctl-sim-")
	if err != nil {
		return nil, nil, err
	}
	node, err := simgpu.NewNode(spec, simgpu.WithSeed(seed), simgpu.WithRoot(dir))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return node, func() { node.Close(); os.RemoveAll(dir) }, nil
}
