package partitioner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/migpro/migpro/gpu"
)

// Reservation holds room on one GPU for one profile: while it stands,
// requests for any other profile neither reuse nor create an instance
// overlapping the held memory slots, so releases there accumulate room until
// the reserved request fits. Requests keep being served everywhere else: on
// every other GPU and, when Placement is set, in the reserved GPU's slots
// outside it (backfill). It is how a large request that keeps losing to a
// stream of small ones stops starving.
type Reservation struct {
	GPU     int
	Profile string
	// Placement is the slots held; nil holds the whole GPU.
	Placement *gpu.Placement
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
	if pl := r.Placement; pl != nil {
		if _, ok := s.geo.OptionAt(r.Profile, pl.Start); !ok {
			return fmt.Errorf("reserve GPU %d for %s: no placement of it at slot %d", r.GPU, r.Profile, pl.Start)
		}
	}
	rr := *r
	if rr.Placement != nil {
		pl := *rr.Placement
		rr.Placement = &pl
	}
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

// admit keeps the options a request for profile may take: at the pinned GPU
// and slot when pin is set, and clear of the reservation (it holds no whole
// GPU for another profile, and no slots the option needs). It is the
// decision's one reservation check, between generating the options and
// ordering them. The caller holds p.mu.
func (p *Partitioner) admit(opts []option, profile string, pin *Pin) []option {
	out := opts[:0]
	for _, o := range opts {
		if pin.allows(o.c.GPU, o.at.Start) && p.reservationAllows(o.slot, profile) && p.reservationClear(o.slot, profile, o.at) {
			out = append(out, o)
		}
	}
	return out
}

// reservationAllows reports whether a request for profile may use slot s at
// all: not when the reservation holds the whole GPU for another profile. The
// caller holds p.mu.
func (p *Partitioner) reservationAllows(s *slot, profile string) bool {
	r := p.reserved
	return r == nil || r.GPU != s.dev.Index() || r.Profile == profile || r.Placement != nil
}

// reservationClear reports whether a request for profile may hold pl on slot
// s: it must not overlap slots held for another profile. The caller holds
// p.mu.
func (p *Partitioner) reservationClear(s *slot, profile string, pl gpu.Placement) bool {
	r := p.reserved
	if r == nil || r.GPU != s.dev.Index() || r.Profile == profile {
		return true
	}
	if r.Placement == nil || pl.Overlaps(*r.Placement) {
		return false
	}
	// The reserved instance's compute slices must stay available too.
	slices := s.profiles[profile].Slices + s.profiles[r.Profile].Slices
	for _, in := range s.records {
		if in.State != Idle && !in.Placement.Overlaps(*r.Placement) {
			slices += s.profiles[in.Profile].Slices
		}
	}
	return slices <= s.geo.Slices
}

// ReserveFor reserves, for a request of profile that keeps waiting, the
// placement expected to drain first: among the GPUs offering the profile
// and the profile's placements on them, the one whose instances in the way
// (in use, or being made or destroyed) were all handed over longest ago, by
// the newest of them (an instance being made or destroyed counts as handed
// over now, one whose time is unknown as handed over before any other; an
// instance the agent hands back to its holder after a restart counts from
// when the holding began, as its checkpoint says: AssignSince).
// Runs of one workload last about as long as each other, so a placement
// whose newest run is old is free soonest; a placement with nothing in the
// way comes first. Ties go to the placement whose instances overlap the
// fewest memory slots, then to the GPU using the fewest compute slices, the
// lower index and the lower slot. Only those slots are held: the rest of
// the GPU keeps serving other profiles. Idle instances do not count: the
// migpro policy re-places them. It replaces any standing reservation.
func (p *Partitioner) ReserveFor(profile string) (Reservation, error) {
	if !slices.Contains(p.profiles, profile) {
		return Reservation{}, fmt.Errorf("reserve for %s: %w", profile, ErrUnknownProfile)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var best drainOption
	found := false
	now := p.now()
	for _, s := range p.slots {
		sh, ok := s.geo.ShapeOf(profile)
		if _, offered := s.profiles[profile]; !ok || !offered {
			continue
		}
		for _, pl := range sh.Placements {
			o := drainOptionAt(s, pl, now)
			if !found || o.before(best) {
				best, found = o, true
			}
		}
	}
	if !found {
		return Reservation{}, fmt.Errorf("reserve for %s: %w", profile, ErrUnknownProfile)
	}
	pl := best.pl
	r := Reservation{GPU: best.gpu, Profile: profile, Placement: &pl}
	p.reserved = &r
	return r, nil
}

// drainOption is one placement ReserveFor may hold, with what decides
// between them.
type drainOption struct {
	gpu    int
	pl     gpu.Placement
	any    bool      // some instance is in the way
	newest time.Time // when the newest instance in the way was handed over
	way    int       // memory slots of the placement that instances hold
	slices int       // compute slices the GPU's instances use
}

// drainOptionAt scores placement pl of slot s at now. The caller holds
// p.mu.
func drainOptionAt(s *slot, pl gpu.Placement, now time.Time) drainOption {
	o := drainOption{gpu: s.dev.Index(), pl: pl}
	for giid, r := range s.records {
		if r.State == Idle {
			continue
		}
		o.slices += s.profiles[r.Profile].Slices
		if !r.Placement.Overlaps(pl) {
			continue
		}
		lo, hi := max(r.Placement.Start, pl.Start), min(r.Placement.End(), pl.End())
		o.way += hi - lo
		since := now
		if r.State == InUse {
			since = s.inUseSince[giid] // the zero time when unknown
		}
		if !o.any || since.After(o.newest) {
			o.newest = since
		}
		o.any = true
	}
	return o
}

// before reports whether o drains before b (see ReserveFor).
func (o drainOption) before(b drainOption) bool {
	switch {
	case o.any != b.any:
		return !o.any
	case !o.newest.Equal(b.newest):
		return o.newest.Before(b.newest)
	case o.way != b.way:
		return o.way < b.way
	case o.slices != b.slices:
		return o.slices < b.slices
	case o.gpu != b.gpu:
		return o.gpu < b.gpu
	}
	return o.pl.Start < b.pl.Start
}

// PlanBackfill returns what AllocateBackfill would do, without doing it.
func (p *Partitioner) PlanBackfill(profile string) (Plan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.decideBackfill(profile, nil)
}

// AllocateBackfill is AllocateAt for a request that may also use the slots
// the reservation holds: the caller expects it to end before the reserved
// request could start there anyway (the runs in its way are expected to end
// later), so serving it costs the reserved request nothing. Only the caller
// knows how long runs last, so only the caller can tell; the partitioner
// never backfills on its own. Without a reservation it is AllocateAt.
func (p *Partitioner) AllocateBackfill(ctx context.Context, profile string, pin *Pin, owner string) (Instance, Plan, error) {
	return p.allocate(ctx, profile, owner, func() (Plan, error) { return p.decideBackfill(profile, pin) })
}

// decideBackfill decides as if no reservation stood. The caller holds p.mu,
// so no other decision sees the reservation lifted.
func (p *Partitioner) decideBackfill(profile string, pin *Pin) (Plan, error) {
	r := p.reserved
	p.reserved = nil
	defer func() { p.reserved = r }()
	return p.decidePinned(profile, pin)
}
