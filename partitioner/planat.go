package partitioner

// PlanAt returns what AllocateAt would do for a profile pinned to one GPU
// and slot, without doing it: reuse an idle instance there, create there
// (destroying idle instances in the way first), or ErrMustWait. The DRA
// driver ranks the placements it publishes by these plans.
func (p *Partitioner) PlanAt(profile string, pin Pin) (Plan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.decidePinned(profile, &pin)
}
