package defaults

import "testing"

func TestResourceName(t *testing.T) {
	for _, tc := range []struct{ domain, profile, want string }{
		{"nvidia.com", "1g.10gb", "nvidia.com/mig-1g.10gb"},
		{"nvidia.com", "1g.10gb+me", "nvidia.com/mig-1g.10gb.me"},
		{"example.org", "7g.80gb", "example.org/mig-7g.80gb"},
	} {
		got := ResourceName(tc.domain, tc.profile)
		if got != tc.want {
			t.Errorf("ResourceName(%q, %q) = %q, want %q", tc.domain, tc.profile, got, tc.want)
		}
		if !IsMIGResource(tc.domain, got) {
			t.Errorf("IsMIGResource(%q, %q) = false", tc.domain, got)
		}
	}
	for _, name := range []string{"nvidia.com/gpu", "nvidia.com/mig-", "other.com/mig-1g.5gb", "cpu"} {
		if IsMIGResource("nvidia.com", name) {
			t.Errorf("IsMIGResource(nvidia.com, %q) = true", name)
		}
	}
}
