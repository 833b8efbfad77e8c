package telemetry

import "time"

// TopEntry is one container's line in GET /v1/top.
type TopEntry struct {
	ID            string   `json:"id"`
	PodNamespace  string   `json:"podNamespace,omitempty"`
	PodName       string   `json:"podName,omitempty"`
	PodUID        string   `json:"podUID,omitempty"`
	ContainerName string   `json:"containerName,omitempty"`
	MIGUUIDs      []string `json:"migUUIDs"`
	// CurrentBytes and Source come from the newest sample of either source.
	CurrentBytes uint64 `json:"currentBytes"`
	Source       Source `json:"source,omitempty"`
	// PeakBytes is the higher of the two sources' peaks.
	PeakBytes uint64 `json:"peakBytes"`
	// CapacityBytes is the instance memory (NVML, else the shim's
	// cuMemGetInfo total).
	CapacityBytes uint64 `json:"capacityBytes"`
	ShimBytes     uint64 `json:"shimBytes"`
	NVMLBytes     uint64 `json:"nvmlBytes"`
	Processes     int    `json:"processes"`
	// Allocs and Frees count the shim's successful driver calls over every
	// process the container ran.
	Allocs  uint64 `json:"allocs"`
	Frees   uint64 `json:"frees"`
	Samples uint64 `json:"samples"`
	// LastSample is nil before the first sample.
	LastSample *time.Time `json:"lastSample,omitempty"`
}

// Top is the body of GET /v1/top.
type Top struct {
	Containers []TopEntry `json:"containers"`
}

// Top reports every registered container, sorted by id.
func (s *Service) Top() Top {
	out := Top{Containers: []TopEntry{}}
	for _, c := range s.snapshotContainers() {
		c.mu.Lock()
		e := TopEntry{
			ID: c.reg.ID, PodNamespace: c.reg.PodNamespace, PodName: c.reg.PodName, PodUID: c.reg.PodUID,
			ContainerName: c.reg.ContainerName, MIGUUIDs: append([]string{}, c.reg.MIGUUIDs...),
			PeakBytes: max(c.shimPeak, c.nvmlPeak), CapacityBytes: c.capacity,
			ShimBytes: c.shimCur, NVMLBytes: c.nvmlUsed, Processes: len(c.procs), Samples: c.count, Allocs: c.allocs, Frees: c.frees,
		}
		if last, ok := c.ring.last(); ok {
			at := last.At
			e.LastSample, e.CurrentBytes, e.Source = &at, last.UsedBytes, last.Source
		}
		c.mu.Unlock()
		out.Containers = append(out.Containers, e)
	}
	return out
}
