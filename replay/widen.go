package replay

// Widening (policies with Widen). A job that names no profile asks only for
// memory: migpro picks the tightest profile holding what it declared. Some
// profiles share their memory and differ in compute slices: on an A100
// 1g.10gb and 2g.10gb both hold two memory slots, and so do 3g.20gb and
// 4g.20gb over four. When memory is what runs out first, as with inference
// runs whose memory grows, the GPUs fill their memory slots while compute
// slices idle: four 1g.10gb runs hold all eight slots and four of the seven
// slices. A scan under Widen first offers such a job the profile with the
// same memory and the most slices, and takes that offer only when it leaves
// the waiting requests as many usable compute slices on that GPU as the
// best placement of the tight profile would (usable as in pack.go). The
// extra slices would have idled, so the run ends sooner at no cost to
// anyone waiting; when no such offer exists the job is placed on its tight
// profile as before. A job that names its profile always gets that profile.

// wider is the profile holding p's memory slots with the most compute
// slices, and whether it has more slices than p.
func (m *Model) wider(p Profile) (Profile, bool) {
	best := p
	for _, q := range m.Profiles {
		if q.Slots == p.Slots && q.Memory == p.Memory && q.Slices > best.Slices {
			best = q
		}
	}
	return best, best.Slices > p.Slices
}

// placeWide starts j on the wide profile of its tight one when j asked only
// for memory and a node offers the wide profile without taking slices the
// waiting requests could use. It reports whether j started; if not, j keeps
// its tight profile.
func (e *engine) placeWide(j *jobState, nodes []int) (bool, error) {
	if !e.pol.Widen || j.job.Profile != "" {
		return false, nil
	}
	tight := j.profile
	wide, ok := e.model.wider(tight)
	if !ok {
		return false, nil
	}
	j.profile = wide
	placed, err := e.placeIf(j, nodes, func(o offer, _ *jobState) bool { return e.widenCosts(o, tight, wide) })
	if !placed {
		j.profile = tight
	}
	return placed, err
}

// widenCosts reports whether offer o of the wide profile leaves the waiting
// profiles fewer usable compute slices on its GPU than the best placement
// of the tight profile there would.
func (e *engine) widenCosts(o offer, tight, wide Profile) bool {
	if o.mask == 0 {
		return false // no placement to judge (static layouts)
	}
	gs := e.nodes[o.node].gpus[o.gpu]
	want := e.wantedNow()
	after := e.usableOn(gs.model, gs.heldSlots|o.mask, gs.heldSlices+wide.Slices, want)
	for _, mask := range gs.model.geo.SlotMasks(tight.Name) {
		if mask&gs.heldSlots == 0 && e.usableOn(gs.model, gs.heldSlots|mask, gs.heldSlices+tight.Slices, want) > after {
			return true
		}
	}
	return false
}

// placeOrWiden is placeIf, after the wide profile has been offered first
// (placeWide).
func (e *engine) placeOrWiden(j *jobState, nodes []int, skip func(offer, *jobState) bool) (bool, error) {
	ok, err := e.placeWide(j, nodes)
	if err != nil || ok {
		return ok, err
	}
	return e.placeIf(j, nodes, skip)
}
