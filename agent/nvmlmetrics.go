package agent

import (
	"time"

	"github.com/migpro/migpro/gpu"
)

// timedNode counts and times every MIG change the partitioner asks of the
// driver (migpro_nvml_operations_total and its latency histogram). Reads
// pass straight through.
type timedNode struct {
	gpu.Node
	m *metrics
}

func (n timedNode) Devices() []gpu.Device {
	devs := n.Node.Devices()
	out := make([]gpu.Device, len(devs))
	for i, d := range devs {
		out[i] = timedDevice{Device: d, m: n.m}
	}
	return out
}

type timedDevice struct {
	gpu.Device
	m *metrics
}

func (d timedDevice) CreateGPUInstance(profileID int, at gpu.Placement) (int, error) {
	start := time.Now()
	id, err := d.Device.CreateGPUInstance(profileID, at)
	d.m.observeNVML("create_gpu_instance", start, err)
	return id, err
}

func (d timedDevice) CreateComputeInstance(giID int) (gpu.Instance, error) {
	start := time.Now()
	in, err := d.Device.CreateComputeInstance(giID)
	d.m.observeNVML("create_compute_instance", start, err)
	return in, err
}

func (d timedDevice) DestroyComputeInstance(giID int) error {
	start := time.Now()
	err := d.Device.DestroyComputeInstance(giID)
	d.m.observeNVML("destroy_compute_instance", start, err)
	return err
}

func (d timedDevice) DestroyGPUInstance(giID int) error {
	start := time.Now()
	err := d.Device.DestroyGPUInstance(giID)
	d.m.observeNVML("destroy_gpu_instance", start, err)
	return err
}
