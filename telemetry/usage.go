package telemetry

import "time"

// Usage is a container's memory with both sources side by side, as the
// predictor's feed reads it. The service publishes one with every sample
// (OnUsage), so a subscriber keeps no copy of either source's state; how far
// to trust each source is the subscriber's call.
type Usage struct {
	// At is the sample's time; Since the container's first sample's.
	At, Since time.Time
	// ShimBytes and NVMLBytes are each source's latest figure: the shim's
	// live driver allocations, the instance's used memory.
	ShimBytes, NVMLBytes uint64
	// ShimSeen says the shim has reported at all.
	ShimSeen bool
	// RequestedBytes and Allocs are the shim's latest (0 until it reports).
	RequestedBytes, Allocs uint64
}

// merge folds smp into the container's merged figures and returns them.
// The caller holds c.mu and publishes smp next.
func (c *container) merge(smp Sample) Usage {
	if c.first.IsZero() {
		c.first = smp.At
	}
	if smp.Source == SourceShim {
		c.lastShim = smp
	}
	return Usage{At: smp.At, Since: c.first, ShimBytes: c.lastShim.UsedBytes, NVMLBytes: c.nvmlUsed, ShimSeen: !c.lastShim.At.IsZero(),
		RequestedBytes: c.lastShim.RequestedBytes, Allocs: c.lastShim.Allocs}
}

// OnUsage subscribes fn to every container's merged usage, one per sample,
// delivered with the sample (see OnSample: same path, same order). fn must
// not block.
func (s *Service) OnUsage(fn func(containerID string, u Usage)) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	var next []func(string, Usage)
	if cur := s.usageSubs.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, fn)
	s.usageSubs.Store(&next)
}

// Registration is what container id registered with.
func (s *Service) Registration(id string) (Registration, bool) {
	c := s.get(id)
	if c == nil {
		return Registration{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reg.Clone(), true
}
