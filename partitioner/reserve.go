package partitioner

import "fmt"

// Reservation holds one GPU for one profile: while it stands, requests for
// any other profile neither reuse nor create on that GPU, so releases there
// accumulate room until the reserved request fits. Requests keep being served
// on every other GPU (backfill). It is how a large request that keeps losing
// to a stream of small ones stops starving.
type Reservation struct {
	GPU     int    `json:"gpu"`
	Profile string `json:"profile"`
}

// Reserve sets the reservation (nil clears it). The GPU must exist and offer
// the profile.
func (p *Partitioner) Reserve(r *Reservation) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r == nil {
		p.reserved = nil
		return nil
	}
	var s *slot
	for _, sl := range p.slots {
		if sl.dev.Index() == r.GPU {
			s = sl
		}
	}
	if s == nil {
		return fmt.Errorf("reserve GPU %d: no such GPU on this node (%d GPUs)", r.GPU, len(p.slots))
	}
	if _, ok := s.profiles[r.Profile]; !ok {
		return fmt.Errorf("reserve GPU %d for %s: the GPU does not offer it", r.GPU, r.Profile)
	}
	rr := *r
	p.reserved = &rr
	return nil
}

// Reserved returns the reservation, if any.
func (p *Partitioner) Reserved() (Reservation, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reserved == nil {
		return Reservation{}, false
	}
	return *p.reserved, true
}

// reservationAllows reports whether a request for profile may use slot s.
// The caller holds p.mu.
func (p *Partitioner) reservationAllows(s *slot, profile string) bool {
	r := p.reserved
	return r == nil || r.GPU != s.dev.Index() || r.Profile == profile
}

// ReserveFor reserves, for a request of profile that keeps waiting, the GPU
// closest to holding it: among the GPUs offering the profile, the one whose
// instances in use (or being made or destroyed) overlap the fewest memory
// slots of the profile's best placement, then the one using fewest compute
// slices, then the lower index. Idle instances do not count: the migpro
// policy re-places them. It replaces any standing reservation.
func (p *Partitioner) ReserveFor(profile string) (Reservation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best, bestWay, bestSlices := -1, 0, 0
	for _, s := range p.slots {
		sh, ok := s.geo.ShapeOf(profile)
		if _, offered := s.profiles[profile]; !ok || !offered {
			continue
		}
		var held uint64
		slices := 0
		for _, r := range s.records {
			if r.State == Idle {
				continue
			}
			for k := r.Placement.Start; k < r.Placement.End(); k++ {
				held |= 1 << k
			}
			slices += s.profiles[r.Profile].Slices
		}
		way := -1
		for _, pl := range sh.Placements {
			n := 0
			for k := pl.Start; k < pl.End(); k++ {
				if held&(1<<k) != 0 {
					n++
				}
			}
			if way < 0 || n < way {
				way = n
			}
		}
		if best < 0 || way < bestWay || (way == bestWay && slices < bestSlices) {
			best, bestWay, bestSlices = s.dev.Index(), way, slices
		}
	}
	if best < 0 {
		return Reservation{}, fmt.Errorf("reserve for %s: %w", profile, ErrUnknownProfile)
	}
	r := Reservation{GPU: best, Profile: profile}
	p.reserved = &r
	return r, nil
}
