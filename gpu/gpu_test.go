package gpu

import (
	"errors"
	"fmt"
	"testing"
)

func TestPlacementOverlaps(t *testing.T) {
	cases := []struct {
		a, b Placement
		want bool
	}{
		{Placement{0, 4}, Placement{4, 4}, false}, // 3g halves touch, do not share
		{Placement{0, 4}, Placement{3, 1}, true},
		{Placement{6, 2}, Placement{6, 1}, true},
		{Placement{0, 8}, Placement{5, 1}, true},
		{Placement{2, 2}, Placement{0, 2}, false},
	}
	for _, c := range cases {
		if got := c.a.Overlaps(c.b); got != c.want {
			t.Errorf("%s overlaps %s = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := c.b.Overlaps(c.a); got != c.want {
			t.Errorf("%s overlaps %s = %v, want %v (not symmetric)", c.b, c.a, got, c.want)
		}
	}
	if p := (Placement{4, 4}); p.End() != 8 || p.String() != "4:4" {
		t.Fatalf("End %d String %q", p.End(), p.String())
	}
}

func TestDriverErrorMatchesItsKindOnly(t *testing.T) {
	err := fmt.Errorf("plan step 2: %w", &DriverError{Op: "destroy GPU instance 3 on GPU 0", Code: "ERROR_IN_USE", Kind: ErrInUse})
	if !errors.Is(err, ErrInUse) || errors.Is(err, ErrNotFound) {
		t.Fatalf("errors.Is mismatched for %v", err)
	}
	if err.Error() != "plan step 2: destroy GPU instance 3 on GPU 0: ERROR_IN_USE" {
		t.Fatalf("message %q", err)
	}
	if errors.Is(&DriverError{Op: "x", Code: "ERROR_UNKNOWN"}, ErrInUse) {
		t.Fatal("kindless error matched a sentinel")
	}
}
