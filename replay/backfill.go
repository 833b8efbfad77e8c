package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/migpro/migpro/partitioner"
)

// Backfill over the reservation (policies with Reserve). A reservation
// holds its slots until the runs in them end; a waiting job of another
// profile that would end before then may use them meanwhile: it costs the
// reserved job nothing when run times are as expected. The shadow time is
// when the last run holding one of the reserved memory slots is expected to
// end (history's mean for its workload on its profile, as the planner uses;
// a run that has outlived that is expected to end now). The scheduler, not
// the partitioner, makes the call: only it knows how long runs last
// (Partitioner.AllocateBackfill).

// shadow is when the reserved slots are expected to be free, and whether a
// reservation with held slots stands.
func (e *engine) shadow() (float64, bool) {
	r := e.resv
	if r == nil {
		return 0, false
	}
	rv, ok := e.nodes[r.node].part.Reserved()
	if !ok || rv.Placement == nil {
		return 0, false
	}
	at := e.now
	for run := range e.active {
		if run.g.node != r.node || run.g.gpu != r.gpu || !run.g.placement.Overlaps(*rv.Placement) {
			continue
		}
		at = max(at, e.now+e.left(run))
	}
	return at, true
}

// left is how long a run is expected to go on holding its instance: its
// expected run time less what it has run, or, not started yet, plus the
// time until its instance is ready. Never below zero.
func (e *engine) left(r *run) float64 {
	v := e.expectedOn(r.j, r.g.profile)
	if r.started {
		v -= e.now - r.rec.Started
	} else {
		v += e.ready[r.g.uuid] - e.now
	}
	return max(v, 0)
}

// backfill starts j over the reservation when it is expected to end before
// the shadow time. It reports whether j started.
func (e *engine) backfill(j *jobState) (bool, error) {
	r := e.resv
	if r == nil || r.j == j || r.profile == j.profile.Name {
		return false, nil
	}
	d, ok := e.pl.(*dynamic)
	if !ok {
		return false, nil
	}
	at, ok := e.shadow()
	if !ok || e.now+e.expectedOn(j, j.profile) > at {
		return false, nil
	}
	g, ok, err := d.backfill(j, r.node)
	if err != nil || !ok {
		return false, err
	}
	e.res.Backfills++
	e.grant(j, g)
	return true, nil
}

// backfill allocates j on node n as if the reservation did not stand.
func (d *dynamic) backfill(j *jobState, n int) (grant, bool, error) {
	nd := d.nodes[n]
	nd.pcie.heavy = d.pcieAware && j.job.Heavy()
	inst, plan, err := nd.part.AllocateBackfill(context.Background(), j.profile.Name, nil, j.job.ID)
	if errors.Is(err, partitioner.ErrMustWait) {
		return grant{}, false, nil
	}
	if err != nil {
		return grant{}, false, fmt.Errorf("node %d: backfill %s for job %s: %w", n, j.profile.Name, j.job.ID, err)
	}
	return d.granted(nd, n, j, inst, plan), true, nil
}
