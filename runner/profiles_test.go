package runner

import "testing"

func TestNextLarger(t *testing.T) {
	a100 := []string{"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}
	for _, tc := range []struct {
		current string
		offered []string
		want    string
	}{
		{"1g.5gb", a100, "1g.10gb"}, // tie on memory: fewer slices
		{"1g.5gb+me", a100, "1g.10gb"},
		{"2g.10gb", a100, "3g.20gb"},
		{"3g.20gb", a100, "7g.40gb"},
		{"7g.40gb", a100, ""},
		{"1c.2g.10gb", a100, "3g.20gb"},
		{"1g.10gb", []string{"1g.20gb+me", "1g.20gb", "2g.20gb"}, "1g.20gb"}, // plain over +me
		{"bogus", a100, ""},
		{"1g.5gb", []string{"bogus", "huge"}, ""},
		{"1g.5gb", nil, ""},
	} {
		if got := NextLarger(tc.current, tc.offered); got != tc.want {
			t.Errorf("NextLarger(%q, %v) = %q, want %q", tc.current, tc.offered, got, tc.want)
		}
	}
}
