package ctl

import "testing"

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{"10737418240": 10 << 30, "10Gi": 10 << 30, "10GiB": 10 << 30, "10GB": 10e9,
		"10G": 10e9, "512MiB": 512 << 20, "1.5Ki": 1536, " 7Gi ": 7 << 30} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "7gb", "-1Gi", "0", "0.5", "1m", "10 GiB"} {
		if got, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", bad, got)
		}
	}
}
