package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/migpro/migpro/client"
)

// A local caller that accepts a larger instance is served on the H100 while
// the A100 that offers its profile is full; one that does not waits.
func TestLocalAllocLargerServesOnAnotherModel(t *testing.T) {
	e := newEnv(t, "a100-40gb,h100-80gb")
	c := runAgent(t, e.start(t))
	ctx := context.Background()
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "7g.40gb", Owner: "big"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "3g.20gb", Owner: "exact"}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("exact 3g.20gb on a full A100: %v, want a conflict (must wait)", err)
	}
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "3g.20gb", Owner: "any", Larger: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.GPU != 1 || r.Profile != "3g.40gb" || r.CDIName == "" {
		t.Fatalf("got %+v, want the H100's 3g.40gb", r)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, in := range st.Instances {
		found = found || (in.CDIName == r.CDIName && in.Owner == "local:any")
	}
	if !found {
		t.Fatalf("status %+v lacks the larger instance held by local:any", st.Instances)
	}
}

// A local caller that accepts a larger instance gets, where its profile
// would leave a compute slice with no memory slot, the wider profile of the
// same slots: an A100's 3g.20gb at slot 0 is made as 4g.20gb; an exact
// caller gets the 3g.20gb it asked for there.
func TestLocalAllocLargerWidensInPlace(t *testing.T) {
	for _, c := range []struct {
		larger bool
		want   string
	}{{false, "3g.20gb"}, {true, "4g.20gb"}} {
		e := newEnv(t, "a100-40gb")
		cl := runAgent(t, e.start(t))
		ctx := context.Background()
		first, err := cl.Alloc(ctx, client.AllocRequest{Profile: "3g.20gb", Owner: "upper"})
		if err != nil {
			t.Fatal(err)
		}
		if first.Placement.Start != 4 || first.Profile != "3g.20gb" {
			t.Fatalf("first 3g.20gb: %+v, want the upper half (slot 4)", first)
		}
		r, err := cl.Alloc(ctx, client.AllocRequest{Profile: "3g.20gb", Owner: "lower", Larger: c.larger})
		if err != nil {
			t.Fatal(err)
		}
		if r.Placement.Start != 0 || r.Profile != c.want {
			t.Errorf("larger=%v: got %s at slot %d, want %s at slot 0", c.larger, r.Profile, r.Placement.Start, c.want)
		}
	}
}
