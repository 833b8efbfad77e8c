package telemetry

import (
	"context"
	"time"
)

// RunPoller calls PollOnce every interval until ctx ends.
func (s *Service) RunPoller(ctx context.Context, src MemorySource, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.PollOnce(src)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// PollOnce records one nvml sample for every registered container with MIG
// UUIDs, querying each instance once however many containers share it, and
// drops containers whose init process is gone. A container on several
// instances gets their sum.
func (s *Service) PollOnce(src MemorySource) {
	type mem struct {
		used, total uint64
		ok          bool
	}
	seen := map[string]mem{}
	for _, c := range s.snapshotContainers() {
		c.mu.Lock()
		reg, pidCheck := c.reg, c.pidCheck
		c.mu.Unlock()
		if pidCheck && !s.cfg.pidAlive(reg.PID) {
			if err := s.Deregister(reg.ID); err != nil {
				s.cfg.log.WithError(err).WithField("container", reg.ID).Warn("telemetry: dropping exited container")
			}
			continue
		}
		var used, total uint64
		okAll := len(reg.MIGUUIDs) > 0
		for _, u := range reg.MIGUUIDs {
			m, cached := seen[u]
			if !cached {
				var err error
				m.used, m.total, err = src.InstanceMemory(u)
				m.ok = err == nil
				if err != nil {
					s.st.pollErrors.Add(1)
					s.cfg.log.WithError(err).WithField("instance", u).Debug("telemetry: polling instance memory")
				}
				seen[u] = m
			}
			okAll = okAll && m.ok
			used += m.used
			total += m.total
		}
		if okAll {
			s.recordNVML(c, used, total)
		}
		s.pruneProcs(c)
	}
}

func (s *Service) recordNVML(c *container, used, total uint64) {
	c.mu.Lock()
	c.nvmlUsed = used
	c.nvmlPeak = max(c.nvmlPeak, used)
	c.capacity = total
	smp := Reading{At: s.cfg.now(), UsedBytes: used, PeakBytes: c.nvmlPeak, Source: SourceNVML}
	c.ring.push(smp)
	c.count++
	c.publish(s, smp)
}

// pruneProcs forgets shim processes that died without their exit sample
// (SIGKILL, OOM kill): the driver freed their memory, so counting it on would
// inflate the container's current use.
func (s *Service) pruneProcs(c *container) {
	if s.cfg.pidAlive == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, p := range c.procs {
		if k.verified && k.pid > 0 && !s.cfg.pidAlive(int(k.pid)) {
			c.shimCur -= p.cur
			delete(c.procs, k)
		}
	}
}
