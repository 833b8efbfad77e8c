package partitioner

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu/simgpu"
)

// TestRandomStreamsKeepInvariants drives random allocate, release and destroy
// sequences with injected driver faults on every simulated model, and after
// every operation checks that the records match the driver, every state is
// valid, no in-use instance was touched and nothing half-made is left.
func TestRandomStreamsKeepInvariants(t *testing.T) {
	for _, model := range simgpu.Models() {
		for _, policy := range []Policy{Migpro{}, Reachability{}, FirstFit{}} {
			t.Run(model+"/"+policy.Name(), func(t *testing.T) {
				for seed := int64(1); seed <= 4; seed++ {
					runRandomStream(t, model+":2", policy, seed, 150)
				}
			})
		}
	}
}

func runRandomStream(t *testing.T, spec string, policy Policy, seed int64, steps int) {
	node := newSim(t, spec)
	p := newPart(t, node, WithPolicy(policy))
	profiles := p.Profiles()
	r := rand.New(rand.NewSource(seed))
	held := map[string]Instance{} // uuid -> what it was when given out
	ops := []simgpu.Op{simgpu.OpCreateGI, simgpu.OpCreateCI, simgpu.OpDestroyCI, simgpu.OpDestroyGI}
	for step := 0; step < steps; step++ {
		where := fmt.Sprintf("%s seed %d step %d", spec, seed, step)
		if r.Intn(10) == 0 {
			if err := node.FailNth(ops[r.Intn(len(ops))], 1+r.Intn(3), nvml.ERROR_UNKNOWN); err != nil {
				t.Fatal(err)
			}
		}
		switch k := r.Intn(10); {
		case k < 6:
			prof := profiles[r.Intn(len(profiles))]
			in, _, err := p.Allocate(context.Background(), prof, "o")
			if err == nil {
				if in.Profile != prof || in.State != InUse {
					t.Fatalf("%s: allocate %s returned %+v", where, prof, in)
				}
				if _, dup := held[in.UUID]; dup {
					t.Fatalf("%s: %s handed out twice", where, in.UUID)
				}
				held[in.UUID] = in
			} else if !errors.Is(err, ErrMustWait) && !isInjected(err) {
				t.Fatalf("%s: allocate %s: %v", where, prof, err)
			}
		case k < 9 && len(held) > 0:
			uuid := anyKey(r, held)
			if _, err := p.Release(uuid); err != nil {
				t.Fatalf("%s: release: %v", where, err)
			}
			delete(held, uuid)
		default:
			for _, in := range p.Instances() {
				if in.State == Idle && in.Complete() {
					if err := p.Destroy(context.Background(), in.UUID); err != nil && !isInjected(err) {
						t.Fatalf("%s: destroy idle: %v", where, err)
					}
					break
				}
			}
		}
		// A fault that fires during a rollback may leave a half-made
		// instance: it must be recorded (agree with the driver) and is
		// repaired by later NVML work on its GPU or by Repair.
		checkInvariants(t, where, p, node, held, true)
	}
	// Faults are one-shot: repeated repairs outlast the ones still pending.
	for i := 0; i < 20; i++ {
		p.Repair()
	}
	checkInvariants(t, spec+" end", p, node, held, false)
}

func checkInvariants(t *testing.T, where string, p *Partitioner, node *simgpu.Node, held map[string]Instance, halfMadeOK bool) {
	t.Helper()
	agreeWithDriver(t, p, node)
	byUUID := map[string]Instance{}
	for _, s := range p.slots {
		st := s.geo.Empty()
		for _, r := range s.records {
			var err error
			if st, err = s.geo.Place(st, r.Profile, r.Placement.Start); err != nil && r.Complete() {
				t.Fatalf("%s: invalid state on GPU %d: %v", where, s.dev.Index(), err)
			}
			if !r.Complete() && !halfMadeOK {
				t.Fatalf("%s: half-made instance left: %+v", where, r)
			}
			byUUID[r.UUID] = *r
		}
	}
	for uuid, was := range held {
		now, ok := byUUID[uuid]
		if !ok || now.State != InUse || now.Placement != was.Placement || now.GIID != was.GIID {
			t.Fatalf("%s: in-use instance %s disturbed: was %+v, now %+v (present %v)", where, uuid, was, now, ok)
		}
	}
}

func isInjected(err error) bool {
	return err != nil && (errors.Is(err, errInjected) || containsCode(err, "ERROR_UNKNOWN"))
}

var errInjected = errors.New("injected")

func containsCode(err error, code string) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if s := e.Error(); len(s) >= len(code) && stringContains(s, code) {
			return true
		}
	}
	return false
}

func stringContains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func anyKey(r *rand.Rand, m map[string]Instance) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// map order is random; sort for reproducibility
	sort.Strings(keys)
	return keys[r.Intn(len(keys))]
}

// TestConcurrentAllocationsAreSafe runs allocations and releases from many
// goroutines on a node with NVML latency, so plans on different GPUs overlap.
func TestConcurrentAllocationsAreSafe(t *testing.T) {
	node := newSim(t, "a100-40gb:2,h100-80gb:2")
	if err := node.SetLatency(simgpu.OpAll, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	p := newPart(t, node)
	profiles := p.Profiles()
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]string{}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			owner := fmt.Sprintf("w%d", w)
			var mine []string
			for i := 0; i < 25; i++ {
				if len(mine) > 0 && r.Intn(3) == 0 {
					uuid := mine[0]
					mine = mine[1:]
					mu.Lock()
					delete(seen, uuid)
					mu.Unlock()
					if _, err := p.Release(uuid); err != nil {
						t.Error(err)
					}
					continue
				}
				in, _, err := p.Allocate(context.Background(), profiles[r.Intn(len(profiles))], owner)
				if err != nil {
					if !errors.Is(err, ErrMustWait) {
						t.Error(err)
					}
					continue
				}
				mu.Lock()
				if other, dup := seen[in.UUID]; dup {
					t.Errorf("%s given to %s while %s holds it", in.UUID, owner, other)
				}
				seen[in.UUID] = owner
				mu.Unlock()
				mine = append(mine, in.UUID)
			}
		}(w)
	}
	wg.Wait()
	agreeWithDriver(t, p, node)
	for uuid, owner := range seen {
		in, err := p.Find(uuid)
		if err != nil || in.Owner != owner || in.State != InUse {
			t.Fatalf("%s should be held by %s: %+v %v", uuid, owner, in, err)
		}
	}
}
