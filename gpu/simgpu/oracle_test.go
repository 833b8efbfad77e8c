package simgpu_test

import (
	"errors"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

// oracle restates the MIG rules from docs/design.md ("MIG facts") in the plainest terms, with
// no code shared with the simulator, to check its verdicts on random input.
type oracle struct {
	profiles map[int]gpu.Profile
	slices   int
	gis      map[int]oracleGI
}

type oracleGI struct {
	profile int
	at      gpu.Placement
	hasCI   bool
	busy    bool
}

func (o *oracle) create(profile int, at gpu.Placement) error {
	p, ok := o.profiles[profile]
	if !ok {
		return gpu.ErrInvalidArgument
	}
	legal := false
	for _, pl := range p.Placements {
		legal = legal || pl == at
	}
	if !legal {
		return gpu.ErrInvalidArgument
	}
	same, used := 0, 0
	for _, gi := range o.gis {
		if gi.at.Overlaps(at) {
			return gpu.ErrInsufficientResources
		}
		if gi.profile == profile {
			same++
		}
		used += o.profiles[gi.profile].Slices
	}
	if same >= p.MaxCount || used+p.Slices > o.slices {
		return gpu.ErrInsufficientResources
	}
	return nil
}

func TestRandomOperationsAgreeWithOracle(t *testing.T) {
	for _, model := range simgpu.Models() {
		t.Run(model, func(t *testing.T) {
			n, err := simgpu.NewNode(model, simgpu.WithLogger(quietlog.New()))
			if err != nil {
				t.Fatal(err)
			}
			d := n.Devices()[0]
			ps, _ := d.Profiles()
			o := &oracle{profiles: map[int]gpu.Profile{}, gis: map[int]oracleGI{}}
			for _, p := range ps {
				o.profiles[p.ID] = p
				o.slices = max(o.slices, p.Slices)
			}
			r := rand.New(rand.NewPCG(1, uint64(len(model))))
			creates := 0
			for step := 0; step < 3000; step++ {
				switch k := r.IntN(10); {
				case k < 5: // create a GI, legal placement half the time
					p := ps[r.IntN(len(ps))]
					at := gpu.Placement{Start: r.IntN(8), Size: 1 + r.IntN(8)}
					if r.IntN(2) == 0 {
						at = p.Placements[r.IntN(len(p.Placements))]
					}
					want := o.create(p.ID, at)
					gi, err := d.CreateGPUInstance(p.ID, at)
					if !sameKind(err, want) {
						t.Fatalf("step %d: create %s at %s = %v, oracle says %v", step, p.Name, at, err, want)
					}
					if err == nil {
						creates++
						o.gis[gi] = oracleGI{profile: p.ID, at: at}
					}
				case k < 7: // make a CI on a random GI
					gi, st, ok := pick(r, o.gis)
					if !ok {
						continue
					}
					var want error
					if st.hasCI {
						want = gpu.ErrInsufficientResources
					}
					if _, err := d.CreateComputeInstance(gi); !sameKind(err, want) {
						t.Fatalf("step %d: CI on GI %d = %v, oracle says %v", step, gi, err, want)
					}
					st.hasCI = true
					o.gis[gi] = st
				case k < 8: // start or stop work on a random complete GI
					gi, st, ok := pick(r, o.gis)
					if !ok || !st.hasCI {
						continue
					}
					if st.busy {
						err = n.RemoveProcess(0, gi, 1)
					} else {
						err = n.AddProcess(0, gi, 1, 1<<20)
					}
					if err != nil {
						t.Fatal(err)
					}
					st.busy = !st.busy
					o.gis[gi] = st
				case k < 9: // destroy a CI
					gi, st, ok := pick(r, o.gis)
					if !ok {
						continue
					}
					want := map[bool]error{true: nil, false: gpu.ErrNotFound}[st.hasCI]
					if st.busy {
						want = gpu.ErrInUse
					}
					if err := d.DestroyComputeInstance(gi); !sameKind(err, want) {
						t.Fatalf("step %d: destroy CI of GI %d = %v, oracle says %v", step, gi, err, want)
					}
					if want == nil {
						st.hasCI = false
						o.gis[gi] = st
					}
				default: // destroy a GI
					gi, st, ok := pick(r, o.gis)
					if !ok {
						continue
					}
					var want error
					if st.hasCI {
						want = gpu.ErrInUse
					}
					if err := d.DestroyGPUInstance(gi); !sameKind(err, want) {
						t.Fatalf("step %d: destroy GI %d = %v, oracle says %v", step, gi, err, want)
					}
					if want == nil {
						delete(o.gis, gi)
					}
				}
				list, err := d.Instances()
				if err != nil {
					t.Fatal(err)
				}
				if len(list) != len(o.gis) {
					t.Fatalf("step %d: adapter lists %d GIs, oracle holds %d", step, len(list), len(o.gis))
				}
				for _, inst := range list {
					st := o.gis[inst.GIID]
					if inst.Placement != st.at || inst.ProfileID != st.profile || inst.Complete() != st.hasCI {
						t.Fatalf("step %d: adapter %+v, oracle %+v", step, inst, st)
					}
				}
			}
			if creates < 50 {
				t.Fatalf("only %d creates succeeded; the walk explores too little", creates)
			}
		})
	}
}

func pick(r *rand.Rand, gis map[int]oracleGI) (int, oracleGI, bool) {
	if len(gis) == 0 {
		return 0, oracleGI{}, false
	}
	ids := make([]int, 0, len(gis))
	for id := range gis {
		ids = append(ids, id)
	}
	// Map order is random; sort so the seed alone decides the walk.
	sort.Ints(ids)
	id := ids[r.IntN(len(ids))]
	return id, gis[id], true
}

func sameKind(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}
