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
