package telemetry

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
