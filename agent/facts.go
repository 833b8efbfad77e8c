package agent

// NodeFacts are the static facts of the node's GPUs, for node labels.
type NodeFacts struct {
	// Product is the first GPU's product name, e.g. "NVIDIA A100-SXM4-40GB".
	Product string
	// GPUs counts the GPUs.
	GPUs int
	// MIGCapable: every GPU has MIG mode on.
	MIGCapable bool
	// Profiles the node's GPUs offer, e.g. "1g.5gb".
	Profiles []string
}

// Facts describes the node's GPUs.
func (a *Agent) Facts() NodeFacts {
	devs := a.node.Devices()
	f := NodeFacts{GPUs: len(devs), MIGCapable: len(devs) > 0, Profiles: a.part.Profiles()}
	for i, d := range devs {
		if i == 0 {
			f.Product = d.Model()
		}
		if on, err := d.MIGEnabled(); err != nil || !on {
			f.MIGCapable = false
		}
	}
	return f
}
