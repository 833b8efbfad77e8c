package partitioner

import "maps"

// Sequence lists where the partitioner would put the profile's next
// requests, one after another, up to limit of them: the first is its
// choice now (as Plan), the second its choice once the first is taken, and
// so on until it would wait. Each choice is the policy's own decision
// (decide) on records where the earlier choices are applied as an
// allocation would apply them: a reused instance in use, a created one in
// use in its place after its victims are gone, and the request counted in
// the workload mix. Nothing is kept: the records and the mix are restored
// before it returns. The DRA driver publishes a profile's devices in this
// order, so the scheduler's first fits for a burst of claims of one
// profile are the partitioner's own sequential choices.
func (p *Partitioner) Sequence(profile string, limit int) []Pin {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.hypothesise()
	defer h.undo()
	var out []Pin
	for len(out) < limit {
		plan, err := p.decide(profile)
		if err != nil {
			break
		}
		out = append(out, h.apply(plan))
	}
	return out
}

// hypothesis records the what-if changes Sequence makes, to undo them.
type hypothesis struct {
	p        *Partitioner
	mix      mix
	reused   []reusedRecord
	removed  map[*slot]map[int]*Instance
	created  map[*slot][]int
	nextTemp map[*slot]int
}

// reusedRecord is a record a what-if reuse took, and its state before.
type reusedRecord struct {
	r     *Instance
	prior Instance
}

// hypothesise starts a what-if: the mix is copied so observe leaves the
// real one alone. The caller holds p.mu.
func (p *Partitioner) hypothesise() *hypothesis {
	h := &hypothesis{p: p, mix: p.mix, removed: map[*slot]map[int]*Instance{}, created: map[*slot][]int{}, nextTemp: map[*slot]int{}}
	p.mix.recent, p.mix.asked = maps.Clone(p.mix.recent), maps.Clone(p.mix.asked)
	p.mix.weights = nil
	return h
}

// apply takes plan as allocate would for an owner, and returns its pin.
func (h *hypothesis) apply(plan Plan) Pin {
	p := h.p
	p.mix.observe(plan.Profile, p.now())
	if plan.Reuse != nil {
		r := plan.Reuse
		h.reused = append(h.reused, reusedRecord{r: r, prior: *r})
		r.State, r.Owner = InUse, "sequence"
		return Pin{GPU: r.GPU, Start: r.Placement.Start}
	}
	s := p.slotOf(plan.GPU)
	if _, ok := h.nextTemp[s]; !ok {
		h.nextTemp[s] = s.nextTemp
	}
	if h.removed[s] == nil {
		h.removed[s] = map[int]*Instance{}
	}
	for _, st := range plan.Steps {
		if st.Kind == StepDestroy {
			h.removed[s][st.GIID] = s.records[st.GIID]
			delete(s.records, st.GIID)
		}
	}
	create := plan.Steps[len(plan.Steps)-1]
	key := s.nextTemp
	s.nextTemp--
	inst := &Instance{Profile: create.Profile, State: InUse, Owner: "sequence"}
	inst.GPU, inst.GIID, inst.Placement = plan.GPU, key, create.Placement
	inst.ProfileID = s.profiles[create.Profile].ID
	s.records[key] = inst
	h.created[s] = append(h.created[s], key)
	return Pin{GPU: plan.GPU, Start: create.Placement.Start}
}

// undo restores the records and the mix as they were before hypothesise.
func (h *hypothesis) undo() {
	for s, keys := range h.created {
		for _, k := range keys {
			delete(s.records, k)
		}
	}
	for s, recs := range h.removed {
		for k, r := range recs {
			s.records[k] = r
		}
	}
	for s, n := range h.nextTemp {
		s.nextTemp = n
	}
	for i := len(h.reused) - 1; i >= 0; i-- {
		*h.reused[i].r = h.reused[i].prior
	}
	h.p.mix = h.mix
}
