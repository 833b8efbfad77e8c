package replay

import "fmt"

// Config is the simulated cluster and the engine's knobs.
type Config struct {
	// Model is the simulated GPU model (sim.Models); default a100-40gb. A
	// mixed node is written with counts, "a100-40gb:2,h100-80gb:1"; then
	// GPUsPerNode is that count (0 takes it from the spec).
	Model string
	// Nodes × GPUsPerNode GPUs, one partitioner per node. Defaults 1 × 8.
	Nodes, GPUsPerNode int
	// Seed seeds the simulated drivers' UUIDs and the predictor's sample
	// noise; the same seed and jobs give the same result.
	Seed int64
	// PCIeMax is a GPU's PCIe bandwidth in GB/s (default 25) and PCIeAlpha
	// the slowdown model's α (default 1): a PCIe-heavy run with demand d on
	// a GPU with n busy heavy runs is slowed by max(1, α·d/(PCIeMax/n)).
	PCIeMax, PCIeAlpha float64
	// NoNVMLCost makes creates and destroys take no simulated time.
	NoNVMLCost bool
	// Check verifies after every simulated instant that no instance is
	// shared, no GPU is over-committed and the partitioner's records agree
	// with the runs. It costs a full scan; tests turn it on.
	Check bool
}

// GPUs is how many GPUs the cluster has: Nodes × GPUsPerNode.
func (c Config) GPUs() int { return c.Nodes * c.GPUsPerNode }

func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = "a100-40gb"
	}
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if c.GPUsPerNode == 0 {
		c.GPUsPerNode = 8
		if m, err := LoadModel(c.Model); err == nil && m.GPUsPerNode() > 0 {
			c.GPUsPerNode = m.GPUsPerNode()
		}
	}
	if c.PCIeMax == 0 {
		c.PCIeMax = 25
	}
	if c.PCIeAlpha == 0 {
		c.PCIeAlpha = 1
	}
	return c
}

// Validate reports a bad configuration in one line.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Nodes < 1 || c.Nodes > 1000:
		return fmt.Errorf("nodes %d: want 1 to 1000", c.Nodes)
	case c.GPUsPerNode < 1 || c.GPUsPerNode > 64:
		return fmt.Errorf("GPUs per node %d: want 1 to 64", c.GPUsPerNode)
	case !(c.PCIeMax > 0) || !(c.PCIeAlpha > 0):
		return fmt.Errorf("PCIe bandwidth %v and α %v: want both > 0", c.PCIeMax, c.PCIeAlpha)
	}
	m, err := LoadModel(c.Model)
	if err != nil {
		return err
	}
	if n := m.GPUsPerNode(); n > 0 && n != c.GPUsPerNode {
		return fmt.Errorf("GPUs per node %d: the node %s has %d (give %d GPUs per node)", c.GPUsPerNode, m.Name, n, n)
	}
	return nil
}
