package partitioner

import (
	"context"
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu/simgpu"
)

func TestSmallInstancesFillFromTheTop(t *testing.T) {
	node := newSim(t, "a100-40gb")
	p := newPart(t, node, WithPolicy(Reachability{}))
	var starts []int
	for i := 0; i < 7; i++ {
		in, _ := mustAlloc(t, p, "1g.5gb", "x")
		starts = append(starts, in.Placement.Start)
	}
	if starts[0] != 6 {
		t.Fatalf("first 1g.5gb at slot %d, want 6 (it keeps 33 of 78 layouts)", starts[0])
	}
	for i := 1; i < len(starts); i++ {
		if starts[i] >= starts[i-1] {
			t.Fatalf("1g.5gb slots %v: not filling from the high slots down", starts)
		}
	}
	agreeWithDriver(t, p, node)
}

func TestReuseBeforeCreate(t *testing.T) {
	node := newSim(t, "a100-40gb")
	p := newPart(t, node)
	a, plan := mustAlloc(t, p, "2g.10gb", "a")
	if len(plan.Steps) != 1 || plan.Steps[0].Kind != StepCreate {
		t.Fatalf("first allocate plan = %v, want one create", plan)
	}
	if _, err := p.Release(a.UUID); err != nil {
		t.Fatal(err)
	}
	b, plan := mustAlloc(t, p, "2g.10gb", "b")
	if plan.Reuse == nil || len(plan.Steps) != 0 || b.UUID != a.UUID || b.Owner != "b" {
		t.Fatalf("second allocate: plan %v, instance %+v; want reuse of %s", plan, b, a.UUID)
	}
}

func TestReclaimDestroysFewestIdle(t *testing.T) {
	node := newSim(t, "a100-40gb")
	p := newPart(t, node)
	var ones []Instance
	for i := 0; i < 7; i++ {
		in, _ := mustAlloc(t, p, "1g.5gb", "x")
		ones = append(ones, in)
	}
	// Free the 1g instances at slots 0 and 1 only; a 2g.10gb fits at 0 after
	// destroying exactly those two.
	for _, in := range ones {
		if in.Placement.Start <= 1 {
			if _, err := p.Release(in.UUID); err != nil {
				t.Fatal(err)
			}
		}
	}
	in, plan := mustAlloc(t, p, "2g.10gb", "y")
	if in.Placement.Start != 0 {
		t.Fatalf("2g.10gb at %d, want 0", in.Placement.Start)
	}
	destroys := 0
	for _, s := range plan.Steps {
		if s.Kind == StepDestroy {
			destroys++
			if s.Placement.Start > 1 {
				t.Fatalf("plan destroys the in-use instance at slot %d: %v", s.Placement.Start, plan)
			}
		}
	}
	if destroys != 2 {
		t.Fatalf("plan %v destroys %d instances, want 2", plan, destroys)
	}
	agreeWithDriver(t, p, node)
}

func TestMustWaitWhenOnlyInUseInstancesBlock(t *testing.T) {
	node := newSim(t, "a100-40gb")
	p := newPart(t, node)
	mustAlloc(t, p, "4g.20gb", "a")
	mustAlloc(t, p, "3g.20gb", "b")
	_, _, err := p.Allocate(context.Background(), "1g.5gb", "c")
	if !errors.Is(err, ErrMustWait) {
		t.Fatalf("allocate on a full GPU: %v, want ErrMustWait", err)
	}
	if _, _, err := p.Allocate(context.Background(), "5g.50gb", "c"); !errors.Is(err, ErrUnknownProfile) {
		t.Fatalf("unknown profile: %v", err)
	}
}

func TestNeverDestroysAnInstanceWithProcesses(t *testing.T) {
	node := newSim(t, "a100-40gb")
	p := newPart(t, node)
	a, _ := mustAlloc(t, p, "3g.20gb", "a")
	mustAlloc(t, p, "4g.20gb", "b")
	if _, err := p.Release(a.UUID); err != nil {
		t.Fatal(err)
	}
	// Idle in migpro's records, but a process still runs on it.
	if err := node.AddProcess(a.GPU, a.GIID, 4242, 1<<30); err != nil {
		t.Fatal(err)
	}
	_, _, err := p.Allocate(context.Background(), "2g.10gb", "c")
	if !errors.Is(err, ErrInstanceInUse) {
		t.Fatalf("reclaim over a busy instance: %v, want ErrInstanceInUse", err)
	}
	if _, err := p.Find(a.UUID); err != nil {
		t.Fatalf("busy instance gone from records: %v", err)
	}
	agreeWithDriver(t, p, node)
	// The busy check covers users outside migpro too.
	node.RemoveProcess(a.GPU, a.GIID, 4242)
	p2 := newPart(t, node, WithBusyCheck(func(context.Context, Instance) (bool, error) { return true, nil }))
	if err := p2.Destroy(context.Background(), a.UUID); !errors.Is(err, ErrInstanceInUse) {
		t.Fatalf("destroy with busy check: %v", err)
	}
	if err := p.Destroy(context.Background(), a.UUID); err != nil {
		t.Fatalf("destroy idle instance: %v", err)
	}
	if _, err := p.Find(a.UUID); !errors.Is(err, ErrUnknownInstance) {
		t.Fatalf("destroyed instance still recorded: %v", err)
	}
	agreeWithDriver(t, p, node)
}

func TestDestroyRefusesInUse(t *testing.T) {
	node := newSim(t, "a30-24gb")
	p := newPart(t, node)
	a, _ := mustAlloc(t, p, "2g.12gb", "a")
	if err := p.Destroy(context.Background(), a.UUID); !errors.Is(err, ErrInstanceInUse) {
		t.Fatalf("destroy in-use: %v", err)
	}
	agreeWithDriver(t, p, node)
}

func TestFailedCreateRollsBack(t *testing.T) {
	for _, op := range []simgpu.Op{simgpu.OpCreateGI, simgpu.OpCreateCI} {
		t.Run(string(op), func(t *testing.T) {
			node := newSim(t, "h100-80gb")
			p := newPart(t, node)
			if err := node.FailNth(op, 1, nvml.ERROR_UNKNOWN); err != nil {
				t.Fatal(err)
			}
			if _, _, err := p.Allocate(context.Background(), "3g.40gb", "a"); err == nil {
				t.Fatal("allocate succeeded despite an injected fault")
			}
			agreeWithDriver(t, p, node)
			if n := len(p.Instances()); n != 0 {
				t.Fatalf("%d instances left after a failed create", n)
			}
			mustAlloc(t, p, "3g.40gb", "a") // the space is free again
		})
	}
}

func TestAfterCreateHookFailureRollsBack(t *testing.T) {
	node := newSim(t, "a100-40gb")
	p := newPart(t, node, WithHooks(Hooks{AfterCreate: func(Instance) error { return errors.New("disk full") }}))
	if _, _, err := p.Allocate(context.Background(), "1g.5gb", "a"); err == nil {
		t.Fatal("allocate succeeded although AfterCreate failed")
	}
	agreeWithDriver(t, p, node)
}

func TestAdoptsExistingAndRollsBackHalfMade(t *testing.T) {
	node := newSim(t, "a100-40gb")
	p := newPart(t, node)
	kept, _ := mustAlloc(t, p, "2g.10gb", "a")
	dev := node.Devices()[0]
	profiles, _ := dev.Profiles()
	var id int
	for _, pr := range profiles {
		if pr.Name == "1g.5gb" {
			id = pr.ID
		}
	}
	if _, err := dev.CreateGPUInstance(id, kept.Placement); err == nil {
		t.Fatal("driver accepted an overlapping GPU instance")
	}
	// A GI without CI, as if the agent died between the two calls.
	if _, err := dev.CreateGPUInstance(id, gpuPlacement(6, 1)); err != nil {
		t.Fatal(err)
	}
	restarted := newPart(t, node)
	agreeWithDriver(t, restarted, node)
	insts := restarted.Instances()
	if len(insts) != 1 || insts[0].UUID != kept.UUID || insts[0].State != Idle {
		t.Fatalf("after restart: %+v, want only %s, idle", insts, kept.UUID)
	}
}

func TestMultiGPUKeepsEmptyGPUsWhole(t *testing.T) {
	node := newSim(t, "a100-40gb:2")
	p := newPart(t, node)
	first, _ := mustAlloc(t, p, "1g.5gb", "a")
	second, _ := mustAlloc(t, p, "1g.5gb", "b")
	if first.GPU != second.GPU {
		t.Fatalf("two 1g.5gb spread over GPUs %d and %d; the second GPU should stay whole", first.GPU, second.GPU)
	}
	// The other GPU can still take a 7g.
	if in, _ := mustAlloc(t, p, "7g.40gb", "c"); in.GPU == first.GPU {
		t.Fatalf("7g.40gb landed on the used GPU")
	}
}

func TestMultiGPUPrefersTheGPUThatLosesLeast(t *testing.T) {
	node := newSim(t, "a100-40gb:2")
	p := newPart(t, node)
	// GPU 0 takes a 4g.20gb (slots 0-3); GPU 1 a 3g at 0 (slots 0-3) too?
	a, _ := mustAlloc(t, p, "4g.20gb", "a")
	b, _ := mustAlloc(t, p, "4g.20gb", "b")
	if a.GPU == b.GPU {
		t.Fatalf("two 4g on one GPU")
	}
	// A 3g fits at slot 4 on both GPUs. Both keep the same fraction, so the
	// tie goes to the lower index.
	c, plan := mustAlloc(t, p, "3g.20gb", "c")
	if c.GPU != 0 || c.Placement.Start != 4 {
		t.Fatalf("3g.20gb at GPU %d slot %d (plan %v), want GPU 0 slot 4", c.GPU, c.Placement.Start, plan)
	}
}
