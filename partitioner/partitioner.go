package partitioner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner/geometry"
)

// Partitioner owns the MIG layout of every GPU on a node. Decisions are made
// under one node-wide lock and are cheap; NVML work runs under a per-GPU lock,
// so GPUs reconfigure in parallel while each GPU's steps stay serialised as
// the driver requires.
type Partitioner struct {
	mu     sync.Mutex // guards every slot's records
	slots  []*slot
	policy Policy
	hooks  Hooks
	// profiles lists the node's profile names, smallest first; fixed in New.
	profiles []string
	log      logrus.FieldLogger
	// busy reports whether an instance is in use by something the
	// partitioner's records do not know (e.g. the kubelet). Checked before
	// every destroy.
	busy func(ctx context.Context, inst Instance) (bool, error)
	// mix is the node's workload mix, for the migpro policy.
	mix mix
	// reserved holds room on one GPU for one profile (see Reserve).
	reserved *Reservation
	// now is the clock the workload mix decays by.
	now func() time.Time
}

// slot is one GPU: its device, its geometry and the records of its instances.
type slot struct {
	dev      gpu.Device
	geo      *geometry.Geometry
	profiles map[string]gpu.Profile
	records  map[int]*Instance // by GIID; pending creates use negative keys
	// inUseSince is when each in-use instance was handed over, by GIID, on
	// the partitioner's clock (markInUse); ReserveFor drains the GPU whose
	// runs in the way were all handed over longest ago.
	inUseSince map[int]time.Time
	nextTemp   int        // next negative key for a pending create
	nvml       sync.Mutex // serialises NVML calls on this GPU
}

// Hooks let the caller order its own work around NVML changes. The agent
// writes a CDI spec in AfterCreate (before anyone can see the instance) and
// removes it in AfterDestroy.
type Hooks struct {
	// AfterCreate runs once the instance exists, before it is recorded. An
	// error rolls the creation back.
	AfterCreate func(Instance) error
	// AfterDestroy runs once the instance is gone from the GPU.
	AfterDestroy func(Instance)
	// Changed runs after any record changes (create, destroy, state change),
	// outside the partitioner's locks.
	Changed func()
}

// Option configures a Partitioner.
type Option func(*config)

type config struct {
	policy  Policy
	counted []string
	hooks   Hooks
	log     logrus.FieldLogger
	busy    func(context.Context, Instance) (bool, error)
	clock   func() time.Time
	allowed []string
}

// WithPolicy sets the placement policy (default DefaultPolicy, migpro).
func WithPolicy(p Policy) Option { return func(c *config) { c.policy = p } }

// WithCountedProfiles sets the profiles reachability counts (default: all).
func WithCountedProfiles(names ...string) Option {
	return func(c *config) { c.counted = names }
}

// WithAllowedProfiles restricts the profiles the partitioner offers and
// creates to names (an admin's allow-list; default: every profile the GPUs
// offer). Instances of other profiles that already exist are adopted as
// usual. New fails on a name no GPU offers.
func WithAllowedProfiles(names ...string) Option {
	return func(c *config) { c.allowed = names }
}

// WithHooks installs the caller's hooks.
func WithHooks(h Hooks) Option { return func(c *config) { c.hooks = h } }

// WithLogger sets the logger.
func WithLogger(l logrus.FieldLogger) Option { return func(c *config) { c.log = l } }

// WithBusyCheck adds a check, run before every destroy, that the instance is
// not in use by anyone outside the partitioner's records.
func WithBusyCheck(f func(context.Context, Instance) (bool, error)) Option {
	return func(c *config) { c.busy = f }
}

// WithClock sets the clock the recent request mix decays by (default
// time.Now); a simulator passes its simulated time.
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// New builds a partitioner over every GPU of a node. Instances that already
// exist are adopted as idle (the caller marks in-use ones from its own
// records); half-made ones (a GPU instance without its compute instance) are
// rolled back.
func New(node gpu.Node, opts ...Option) (*Partitioner, error) {
	cfg := config{policy: DefaultPolicy, clock: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		return nil, errors.New("partitioner: no logger (WithLogger)")
	}
	p := &Partitioner{policy: cfg.policy, hooks: cfg.hooks, log: cfg.log, busy: cfg.busy, now: cfg.clock}
	geos := map[string]*geometry.Geometry{} // computed once per GPU model
	for _, dev := range node.Devices() {
		s, err := newSlot(dev, geos, cfg.counted)
		if err != nil {
			return nil, err
		}
		p.slots = append(p.slots, s)
	}
	p.profiles = profileNames(p.slots)
	if len(cfg.allowed) > 0 {
		for _, n := range cfg.allowed {
			if !slices.Contains(p.profiles, n) {
				return nil, fmt.Errorf("allowed profile %q: %w (offered: %v)", n, ErrUnknownProfile, p.profiles)
			}
		}
		p.profiles = slices.DeleteFunc(p.profiles, func(n string) bool { return !slices.Contains(cfg.allowed, n) })
	}
	for _, s := range p.slots {
		if err := p.adopt(s); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func newSlot(dev gpu.Device, geos map[string]*geometry.Geometry, counted []string) (*slot, error) {
	enabled, err := dev.MIGEnabled()
	if err != nil {
		return nil, fmt.Errorf("GPU %d: read MIG mode: %w", dev.Index(), err)
	}
	if !enabled {
		return nil, fmt.Errorf("GPU %d (%s): MIG mode is off; enable it with nvidia-smi -i %d -mig 1", dev.Index(), dev.Model(), dev.Index())
	}
	profiles, err := dev.Profiles()
	if err != nil {
		return nil, fmt.Errorf("GPU %d: read MIG profiles: %w", dev.Index(), err)
	}
	geo, ok := geos[dev.Model()]
	if !ok {
		if geo, err = geometry.New(profiles, geometry.Config{Counted: counted}); err != nil {
			return nil, fmt.Errorf("GPU %d (%s): %w", dev.Index(), dev.Model(), err)
		}
		geos[dev.Model()] = geo
	}
	s := &slot{dev: dev, geo: geo, profiles: map[string]gpu.Profile{}, records: map[int]*Instance{}, inUseSince: map[int]time.Time{}, nextTemp: -1}
	for _, pr := range profiles {
		s.profiles[pr.Name] = pr
	}
	return s, nil
}

// adopt records what NVML already holds and rolls back half-made instances.
func (p *Partitioner) adopt(s *slot) error {
	insts, err := s.dev.Instances()
	if err != nil {
		return fmt.Errorf("GPU %d: list instances: %w", s.dev.Index(), err)
	}
	for _, in := range insts {
		name := s.profileName(in.ProfileID)
		if !in.Complete() {
			p.log.WithFields(logrus.Fields{"gpu": in.GPU, "gi": in.GIID}).Warn("rolling back half-made GPU instance")
			if err := s.dev.DestroyGPUInstance(in.GIID); err != nil {
				return fmt.Errorf("GPU %d: roll back half-made GPU instance %d: %w", in.GPU, in.GIID, err)
			}
			continue
		}
		s.records[in.GIID] = &Instance{Instance: in, Profile: name, State: Idle}
	}
	return nil
}

func (s *slot) profileName(id int) string {
	for name, pr := range s.profiles {
		if pr.ID == id {
			return name
		}
	}
	return fmt.Sprintf("profile-%d", id)
}

// state is the geometry state of every record on the slot (idle, in use and
// pending alike), optionally leaving some out.
func (s *slot) state(skip map[int]bool) geometry.State {
	st := s.geo.Empty()
	for key, r := range s.records {
		if skip[key] {
			continue
		}
		if o, ok := s.geo.OptionAt(r.Profile, r.Placement.Start); ok {
			st = s.geo.Add(st, o.Index)
		}
	}
	return st
}

// Instances returns a copy of every record, ordered by GPU then slot.
func (p *Partitioner) Instances() []Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Instance
	for _, s := range p.slots {
		for _, r := range s.records {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GPU != out[j].GPU {
			return out[i].GPU < out[j].GPU
		}
		return out[i].Placement.Start < out[j].Placement.Start
	})
	return out
}

// GPU describes one GPU for status pictures.
type GPU struct {
	Index     int
	Model     string
	UUID      string
	Slots     int
	Slices    int
	Reachable int
	Maximal   int
}

// GPUs describes every GPU with its current reachability.
func (p *Partitioner) GPUs() []GPU {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]GPU, len(p.slots))
	for i, s := range p.slots {
		out[i] = GPU{Index: s.dev.Index(), Model: s.dev.Model(), UUID: s.dev.UUID(), Slots: s.geo.Slots,
			Slices: s.geo.Slices, Reachable: s.geo.Reachable(s.state(nil)), Maximal: s.geo.MaximalLayouts()}
	}
	return out
}

// Profiles lists the profile names the node offers, smallest first.
func (p *Partitioner) Profiles() []string { return slices.Clone(p.profiles) }

// profileNames lists the profile names the slots offer, smallest first.
func profileNames(slots []*slot) []string {
	seen := map[string]gpu.Profile{}
	for _, s := range slots {
		for n, pr := range s.profiles {
			seen[n] = pr
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := seen[names[i]], seen[names[j]]
		if a.Slices != b.Slices {
			return a.Slices < b.Slices
		}
		if a.MemoryMiB != b.MemoryMiB {
			return a.MemoryMiB < b.MemoryMiB
		}
		return names[i] < names[j]
	})
	return names
}

// Device returns the GPU layer device of a GPU index.
func (p *Partitioner) Device(index int) (gpu.Device, bool) {
	for _, s := range p.slots {
		if s.dev.Index() == index {
			return s.dev, true
		}
	}
	return nil, false
}

func (p *Partitioner) changed() {
	if p.hooks.Changed != nil {
		p.hooks.Changed()
	}
}
