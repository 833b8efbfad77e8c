package estimator

import (
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{
		"7Gi":                  7 << 30,
		"7.5Gi":                7.5 * (1 << 30),
		"8G":                   8e9,
		"512Mi":                512 << 20,
		"1048576":              1 << 20,
		"1.5k":                 1500,
		"0.5":                  1, // rounds up to a whole byte
		"1Ei":                  1 << 60,
		"15Ei":                 15 << 60,
		"0.000000001Gi":        2, // 1.07 bytes round up
		"18446744073709551615": 1<<64 - 1,
	} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestParseBytesRejects(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "empty",
		"7GB":                  `unknown suffix "GB" (Kubernetes spells it G or Gi)`,
		"7gi":                  `unknown suffix "gi"`,
		"7 Gi":                 `unknown suffix " Gi"`,
		"-7Gi":                 "unknown suffix",
		"+7Gi":                 "unknown suffix",
		"1m":                   `unknown suffix "m"`,
		"1e9":                  `unknown suffix "e9"`,
		"Gi":                   "want a number",
		"1.2.3Gi":              "want a number",
		"7.Gi":                 "want a number",
		".":                    "want a number",
		"0":                    "more than zero",
		"0Gi":                  "more than zero",
		"16Ei":                 "too large",
		"18446744073709551616": "too large",
	} {
		_, err := ParseBytes(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBytes(%q) = %v, want error containing %q", in, err, want)
		}
	}
}
