package partitioner

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/gpu"
)

// Serving a request on a larger instance. When the profile asked for can be
// neither reused nor made now (not even by destroying idle instances), a
// partitioner built WithLargerInstances serves it on an instance of another
// profile that holds it, at least as many compute slices and as much memory,
// the way a static layout hands out the smallest idle instance that holds a
// request. The substitute is, in order: an idle instance (no NVML step), else
// a new one in free space; among each, the smallest profile (fewest slices,
// then least memory), then as the policy ranks placements. It never destroys
// an idle instance to make a larger one. On a node of one model this rarely
// changes anything, since any space that holds a larger instance could hold
// the request itself; on a mixed node it lets a profile only one model offers
// use the other model's GPUs (an H100's 3g.40gb on an A100's 7g.40gb).

// AllocateHolding is AllocateAt for a caller that takes any instance holding
// the profile (the agent's local API): the profile itself when it can be
// reused or made now, made as the wider profile of the same memory where
// that uses a compute slice which would otherwise idle (widenInPlace; not
// when pinned), else a larger instance (planLarger). Allocate,
// Provision and Plan stay exact, since the cluster's resources are per
// profile. Plan.Asked is set when the instance is larger.
func (p *Partitioner) AllocateHolding(ctx context.Context, profile string, pin *Pin, owner string) (Instance, Plan, error) {
	return p.allocate(ctx, profile, owner, func() (Plan, error) { return p.decideHolding(profile, pin) })
}

// PlanHolding is what AllocateHolding would do now, without doing it.
func (p *Partitioner) PlanHolding(profile string) (Plan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.decideHolding(profile, nil)
}

func (p *Partitioner) decideHolding(profile string, pin *Pin) (Plan, error) {
	plan, err := p.decidePinned(profile, pin)
	if err == nil && pin == nil {
		return p.widenInPlace(profile, plan), nil
	}
	if !errors.Is(err, ErrMustWait) {
		return plan, err
	}
	if lp, ok := p.planLarger(profile, pin); ok {
		return lp, nil
	}
	return plan, err
}

// planLarger finds a larger instance for profile when its own must wait.
func (p *Partitioner) planLarger(profile string, pin *Pin) (Plan, bool) {
	want, ok := p.profileSize(profile)
	if !ok {
		return Plan{}, false
	}
	type size struct {
		name   string
		slices int
		memory uint64
	}
	var subs []size
	seen := map[string]bool{profile: true}
	for _, s := range p.slots {
		for name, pr := range s.profiles {
			if seen[name] || !slices.Contains(p.profiles, name) || pr.Slices < want.Slices || pr.MemoryMiB < want.MemoryMiB {
				continue
			}
			seen[name] = true
			subs = append(subs, size{name, pr.Slices, pr.MemoryMiB})
		}
	}
	sort.Slice(subs, func(a, b int) bool {
		if subs[a].slices != subs[b].slices {
			return subs[a].slices < subs[b].slices
		}
		if subs[a].memory != subs[b].memory {
			return subs[a].memory < subs[b].memory
		}
		return subs[a].name < subs[b].name
	})
	for _, sub := range subs {
		if plan, ok := p.decideStage(sub.name, pin, p.reuseStage()); ok {
			return p.substituted(profile, plan), true
		}
	}
	for _, sub := range subs {
		if plan, ok := p.decideStage(sub.name, pin, p.createStage(false)); ok {
			return p.substituted(profile, plan), true
		}
	}
	return Plan{}, false
}

func (p *Partitioner) substituted(asked string, plan Plan) Plan {
	plan.Asked = asked
	p.log.WithFields(logrus.Fields{"asked": asked, "profile": plan.Profile, "gpu": plan.GPU}).Debug("serving on a larger instance")
	return plan
}

// profileSize is the profile as the first GPU offering it describes it.
func (p *Partitioner) profileSize(profile string) (gpu.Profile, bool) {
	for _, s := range p.slots {
		if pr, ok := s.profiles[profile]; ok {
			return pr, true
		}
	}
	return gpu.Profile{}, false
}
