package replay

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/partitioner"
)

// A replay of migpro is the agent's own decision code, not a copy of it:
// the instances the replay handed out on a busy 4-GPU node are, one by one,
// the ones a fresh partitioner gives through the calls the agent makes for
// a local caller that accepts a larger instance (ObservePending with what
// waits, then AllocateHolding; Release when a run ends), at the same
// simulated times.
func TestReplayIsTheAgentsDecision(t *testing.T) {
	m := model(t)
	jobs, err := Generate(MixSpec{Name: "online", Jobs: 200, Seed: 5, Load: 0.9, GPUs: 4}, m)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Nodes: 1, GPUsPerNode: 4, Seed: 5}
	res := simRun(t, jobs, cfg, policy(t, "migpro"))
	arrival, order := map[string]float64{}, map[string]int{}
	for i, j := range jobs {
		arrival[j.ID], order[j.ID] = j.Arrival, i
	}
	runs := append([]RunRecord(nil), res.Runs...)
	if len(runs) != len(jobs) {
		t.Fatalf("%d runs for %d jobs: the check below assumes one run per job", len(runs), len(jobs))
	}
	sort.SliceStable(runs, func(a, b int) bool {
		if runs[a].Granted != runs[b].Granted {
			return runs[a].Granted < runs[b].Granted
		}
		return order[runs[a].Job] < order[runs[b].Job] // a scan serves the queue in arrival order
	})

	now := 0.0
	sn, err := simgpu.NewNode("a100-40gb:4", simgpu.WithSeed(cfg.Seed), simgpu.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	part, err := partitioner.New(sn, partitioner.WithPolicy(partitioner.Migpro{}), partitioner.WithLogger(quietLogger()),
		partitioner.WithClock(func() time.Time { return simTime(now) }))
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{} // job -> instance UUID
	ended := append([]RunRecord(nil), runs...)
	sort.SliceStable(ended, func(a, b int) bool { return ended[a].Ended < ended[b].Ended })
	next := 0
	for i, r := range runs {
		t0 := r.Granted
		for ; next < len(ended) && ended[next].Ended <= t0; next++ { // runs ended by then are released first
			if _, err := part.Release(held[ended[next].Job]); err != nil {
				t.Fatalf("release %s: %v", ended[next].Job, err)
			}
		}
		now = t0
		if i == 0 || runs[i-1].Granted != t0 { // a new scan: what waits at its start
			counts := map[string]int{}
			for _, w := range runs {
				if arrival[w.Job] <= t0 && w.Granted >= t0 {
					counts[jobs[order[w.Job]].Profile]++
				}
			}
			part.ObservePending(counts)
		}
		in, _, err := part.AllocateHolding(context.Background(), jobs[order[r.Job]].Profile, nil, r.Job)
		if err != nil {
			t.Fatalf("at %.1f s, job %s: the agent's partitioner refused what the replay granted (GPU %d slot %d): %v", t0, r.Job, r.GPU, r.Start, err)
		}
		if in.GPU != r.GPU || in.Placement.Start != r.Start || in.Profile != r.Profile {
			t.Fatalf("at %.1f s, job %s: replay gave %s on GPU %d slot %d, the agent's partitioner %s on GPU %d slot %d",
				t0, r.Job, r.Profile, r.GPU, r.Start, in.Profile, in.GPU, in.Placement.Start)
		}
		held[r.Job] = in.UUID
	}
}
