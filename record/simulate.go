package record

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
)

// Sim is a simulated GPU made for one recording: a node of one GPU of a
// model, one MIG instance on it, and the simulated driver's user space
// installed under a temporary root.
type Sim struct {
	// Env points the command at the stub libcuda and the instance.
	Env []string
	// Instance is the MIG instance the command runs on; Profile its name.
	Instance gpu.Instance
	Profile  gpu.Profile
	Model    string
	root     string
	node     *simgpu.Node
}

// Simulate builds a simulated node with one GPU of model (e.g. a100-40gb),
// creates a MIG instance of profile (empty: the whole GPU) and installs the
// stubs from stubDir (`make simdriver`) under a temporary root.
func Simulate(model, profile, stubDir string, log logrus.FieldLogger) (*Sim, error) {
	if strings.Contains(model, ":") || strings.Contains(model, ",") {
		return nil, fmt.Errorf("simulate: %q: want one model, e.g. a100-40gb", model)
	}
	root, err := os.MkdirTemp("", "migctl-sim-")
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	s := &Sim{root: root, Model: model}
	if err := s.build(model, profile, stubDir, log); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Sim) build(model, profile, stubDir string, log logrus.FieldLogger) error {
	node, err := simgpu.NewNode(model, simgpu.WithRoot(s.root), simgpu.WithLogger(log))
	if err != nil {
		return fmt.Errorf("simulate: %w (models: %s)", err, strings.Join(simgpu.Models(), ", "))
	}
	s.node = node
	if err := simgpu.InstallDriverRoot(s.root, stubDir); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	dev := node.Devices()[0]
	profiles, err := dev.Profiles()
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	gpu.SortProfiles(profiles)
	var names []string
	for _, p := range profiles {
		names = append(names, p.Name)
		if profile == p.Name || profile == "" && p.Slices >= s.Profile.Slices && p.MemoryMiB >= s.Profile.MemoryMiB {
			s.Profile = p
		}
	}
	if s.Profile.Name == "" {
		return fmt.Errorf("simulate: %s has no profile %q (profiles: %s)", model, profile, strings.Join(names, ", "))
	}
	gi, err := dev.CreateGPUInstance(s.Profile.ID, s.Profile.Placements[0])
	if err != nil {
		return fmt.Errorf("simulate: create %s: %w", s.Profile.Name, err)
	}
	if s.Instance, err = dev.CreateComputeInstance(gi); err != nil {
		return fmt.Errorf("simulate: create %s: %w", s.Profile.Name, err)
	}
	lib := filepath.Join(s.root, simgpu.LibDir)
	ld := lib
	if old := os.Getenv("LD_LIBRARY_PATH"); old != "" {
		ld += ":" + old
	}
	s.Env = []string{
		"NVIDIA_VISIBLE_DEVICES=" + s.Instance.UUID,
		"CUDA_VISIBLE_DEVICES=" + s.Instance.UUID,
		"MIGPRO_SIMGPU_STATE=" + filepath.Join(s.root, simgpu.StateDirName),
		"LD_LIBRARY_PATH=" + ld,
		"PATH=" + filepath.Join(s.root, "usr", "bin") + ":" + os.Getenv("PATH"),
	}
	return nil
}

// Source is the instance's used memory in the simulated NVML. The instance
// is the command's alone, so it stands for NVML's per-process figure.
func (s *Sim) Source() Source { return simSource{s} }

// Close removes the node's files.
func (s *Sim) Close() error {
	if s.node != nil {
		_ = s.node.Close()
	}
	return os.RemoveAll(s.root)
}

type simSource struct{ s *Sim }

func (src simSource) Describe() string {
	return fmt.Sprintf("simulated NVML, used memory of %s (%s on a simulated %s)", src.s.Instance.UUID, src.s.Profile.Name, src.s.Model)
}

func (src simSource) Close() error { return nil }

func (src simSource) Sample(int) (uint64, uint64, error) {
	m, err := src.s.node.Devices()[0].InstanceMemory(src.s.Instance.GIID)
	if err != nil {
		return 0, 0, err
	}
	return m.Used, m.Used, nil
}

// Lib is the simulated node's NVML.
func (s *Sim) Lib() nvml.Interface { return s.node.Lib() }

// Root is the node's root: the driver root, with dev/ and the driver's state.
func (s *Sim) Root() string { return s.root }

// Paths locate the node's device nodes and capability files.
func (s *Sim) Paths() gpu.DriverPaths { return s.node.Paths() }
