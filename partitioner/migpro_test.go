package partitioner

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// serveStream allocates each profile in turn (nothing released) and returns
// how many were served before the first had to wait, with their placements.
func serveStream(t *testing.T, spec string, policy Policy, stream []string) (int, []string) {
	t.Helper()
	node := newSim(t, spec)
	p := newPart(t, node, WithPolicy(policy))
	var where []string
	for i, prof := range stream {
		in, _, err := p.Allocate(context.Background(), prof, fmt.Sprint(i))
		if errors.Is(err, ErrMustWait) {
			return i, where
		}
		if err != nil {
			t.Fatal(err)
		}
		where = append(where, fmt.Sprintf("%s@gpu%d/%d", prof, in.GPU, in.Placement.Start))
	}
	agreeWithDriver(t, p, node)
	return len(stream), where
}

// The stream from issue 12: counting layouts alone puts the two 1g at the
// top (slots 6 and 5), which blocks the 3g at slot 4 and strands slot 7, so
// the fifth request waits. First-fit and migpro serve all five.
func TestMigproServesOneOneThreeOneOne(t *testing.T) {
	stream := []string{"1g.5gb", "1g.5gb", "3g.20gb", "1g.5gb", "1g.5gb"}
	for _, c := range []struct {
		policy Policy
		want   int
	}{{Migpro{}, 5}, {FirstFit{}, 5}, {Reachability{}, 4}} {
		got, where := serveStream(t, "a100-40gb", c.policy, stream)
		if got != c.want {
			t.Errorf("%s served %d of 5 (%v), want %d", c.policy.Name(), got, where, c.want)
		}
	}
}

// On a mixed node only the H100 offers 3g.40gb: the 1g.10gb must go to an
// A100 so the second 3g.40gb still fits.
func TestMigproKeepsProfilesOnlySomeGPUsOffer(t *testing.T) {
	stream := []string{"3g.40gb", "1g.10gb", "3g.40gb"}
	got, where := serveStream(t, "a100-40gb:2,h100-80gb:1", Migpro{}, stream)
	if got != 3 {
		t.Fatalf("migpro served %d of 3 (%v), want all", got, where)
	}
	if got, _ := serveStream(t, "a100-40gb:2,h100-80gb:1", Reachability{}, stream); got == 3 {
		t.Logf("reachability served all three too")
	}
}
