package dra_test

import (
	"testing"

	"github.com/migpro/migpro/partitioner"
)

// A burst of claims of one profile, all allocated by the scheduler's own
// allocator over one publish (no republish between them), gets migpro's
// sequential choices: before each claim is prepared, in the order they
// were allocated, the device it was given is where the partitioner would
// now put the profile's next request. A 2g.10gb held by the kubelet on the
// second GPU makes the two GPUs differ.
func TestBurstOfOneProfileGetsMigprosSequence(t *testing.T) {
	for _, tc := range []struct {
		profile string
		n       int
	}{{"1g.5gb", 12}, {"2g.10gb", 5}, {"1g.10gb", 6}} {
		t.Run(tc.profile, func(t *testing.T) {
			e := newEnv(t, "a100-40gb:2")
			e.start()
			part := e.agent.Partitioner()
			if _, _, err := part.AllocateAt(t.Context(), "2g.10gb", &partitioner.Pin{GPU: 1, Start: 0}, "kubelet"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the republish", func() bool { return e.slotTaken(1, 0) })
			var got []string
			for k := 0; k < tc.n; k++ {
				d := e.allocate(t, got, exactly(tc.profile+".mig.migpro.dev"))
				if d == "" {
					t.Fatalf("claim %d of %s: no device fits (allocated %v)", k+1, tc.profile, got)
				}
				got = append(got, d)
			}
			for k, d := range got {
				plan, err := part.Plan(tc.profile)
				if err != nil {
					t.Fatalf("claim %d (%s): migpro would wait: %v", k+1, d, err)
				}
				if want := pinnedName(tc.profile, plan); d != want {
					t.Fatalf("claim %d of the burst got %s, migpro's choice is %s (burst %v)", k+1, d, want, got)
				}
				if r := e.prepare(e.claim("c"+itoa(k), d)); r.Error != "" {
					t.Fatal(r.Error)
				}
			}
			if n := metric(t, e.agent, "migpro_dra_prepare_not_preferred_total"); n != 0 {
				t.Errorf("%v Prepares were not migpro's preference", n)
			}
		})
	}
}

// pinnedName is the device name of a plan's placement.
func pinnedName(profile string, plan partitioner.Plan) string {
	gpuIndex, start := plan.GPU, 0
	if plan.Reuse != nil {
		start = plan.Reuse.Placement.Start
	} else {
		start = plan.Steps[len(plan.Steps)-1].Placement.Start
	}
	return "gpu" + itoa(gpuIndex) + "-" + labelOf(profile) + "-s" + itoa(start)
}

func labelOf(profile string) string {
	b := []byte(profile)
	for i, c := range b {
		if c == '.' || c == '+' {
			b[i] = '-'
		}
	}
	return string(b)
}

// slotTaken reports whether the published pool is whole (every slice of
// one generation) and its counters show a GPU's slot as taken outside DRA.
func (e *env) slotTaken(gpuIndex, slot int) bool {
	sl := e.slices()
	if len(sl) == 0 || int64(len(sl)) != sl[0].Spec.Pool.ResourceSliceCount {
		return false
	}
	for _, s := range sl {
		if s.Spec.Pool.Generation != sl[0].Spec.Pool.Generation {
			return false
		}
	}
	for _, s := range sl {
		for _, cs := range s.Spec.SharedCounters {
			if cs.Name == "gpu"+itoa(gpuIndex) {
				c, ok := cs.Counters["slot"+itoa(slot)]
				return ok && val(c) == 0
			}
		}
	}
	return false
}
