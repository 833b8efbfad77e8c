package partitioner

import (
	"context"
	"testing"
)

// Two A100s, both holding work, with a 7g waiting: it can start only once
// one GPU drains. A 3g.20gb placed beside GPU 1's 3g (slot 0) leaves GPU 0
// holding a single 1g, the GPU nearest to draining; placed on GPU 0, it
// would lose less of that one GPU's capacity (the comparison migpro made
// across GPUs before), but leave both GPUs busy. Migpro packs onto the GPU
// already using more slices before it compares capacity across GPUs.
func TestMigproPacksOntoTheBusierGPU(t *testing.T) {
	ctx := context.Background()
	p := newPart(t, newSim(t, "a100-40gb:2"))
	for _, a := range []struct {
		profile    string
		gpu, start int
	}{{"1g.5gb", 0, 6}, {"3g.20gb", 1, 4}} {
		if _, _, err := p.AllocateAt(ctx, a.profile, &Pin{GPU: a.gpu, Start: a.start}, "run"); err != nil {
			t.Fatalf("%s on GPU %d at %d: %v", a.profile, a.gpu, a.start, err)
		}
	}
	p.ObservePending(map[string]int{"7g.40gb": 1, "3g.20gb": 1})
	in, _ := mustAlloc(t, p, "3g.20gb", "next")
	if in.GPU != 1 || in.Placement.Start != 0 {
		t.Fatalf("3g.20gb went to GPU %d slot %d, want GPU 1 slot 0 (beside the other 3g, so GPU 0 drains)", in.GPU, in.Placement.Start)
	}
	// With only one GPU busy the headroom already decides: the 3g goes
	// beside the 1g, and GPU 1 stays whole for the 7g.
	q := newPart(t, newSim(t, "a100-40gb:2"))
	if _, _, err := q.AllocateAt(ctx, "1g.5gb", &Pin{GPU: 0, Start: 6}, "run"); err != nil {
		t.Fatal(err)
	}
	q.ObservePending(map[string]int{"7g.40gb": 1, "3g.20gb": 1})
	if in, _ := mustAlloc(t, q, "3g.20gb", "next"); in.GPU != 0 {
		t.Fatalf("3g.20gb went to the empty GPU %d, want GPU 0", in.GPU)
	}
}
