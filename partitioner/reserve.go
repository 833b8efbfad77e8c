package partitioner

import "fmt"

// Reservation holds one GPU for one profile: while it stands, requests for
// any other profile neither reuse nor create on that GPU, so releases there
// accumulate room until the reserved request fits. Requests keep being served
// on every other GPU (backfill). It is how a large request that keeps losing
// to a stream of small ones stops starving.
type Reservation struct {
	GPU     int
	Profile string
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
