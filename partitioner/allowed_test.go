package partitioner

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/migpro/migpro/internal/quietlog"
)

// TestAllowedProfiles: with an allow-list the partitioner offers and creates
// only those profiles, by every path (allocate, warm-pool provision,
// reservation), and refuses an allow-list naming a profile no GPU offers.
func TestAllowedProfiles(t *testing.T) {
	node := newSim(t, "a100-40gb")
	p := newPart(t, node, WithAllowedProfiles("1g.5gb", "3g.20gb"))
	if got := p.Profiles(); !slices.Equal(got, []string{"1g.5gb", "3g.20gb"}) {
		t.Fatalf("Profiles() = %v, want the allow-list", got)
	}
	mustAlloc(t, p, "1g.5gb", "a")
	ctx := context.Background()
	if _, _, err := p.Allocate(ctx, "2g.10gb", "b"); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("allocate 2g.10gb outside the allow-list: %v, want ErrUnknownProfile", err)
	}
	if _, _, err := p.Provision(ctx, "7g.40gb"); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("provision 7g.40gb outside the allow-list: %v, want ErrUnknownProfile", err)
	}
	if _, err := p.ReserveFor("4g.20gb"); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("reserve 4g.20gb outside the allow-list: %v, want ErrUnknownProfile", err)
	}
	if _, err := New(node, WithLogger(quietlog.New()), WithAllowedProfiles("1g.20gb")); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("allow-list naming 1g.20gb on an A100-40GB: %v, want ErrUnknownProfile", err)
	}
}
