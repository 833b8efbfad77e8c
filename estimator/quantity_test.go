package estimator

import (
	"strconv"
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
		"":                      "empty",
		"7GB":                   `unknown suffix "GB" (Kubernetes spells it G or Gi)`,
		"7gi":                   `unknown suffix "gi"`,
		"7 Gi":                  `unknown suffix " Gi"`,
		"-7Gi":                  "unknown suffix",
		"+7Gi":                  "unknown suffix",
		"1m":                    `unknown suffix "m"`,
		"1e9":                   `unknown suffix "e9"`,
		"Gi":                    "want a number",
		"1.2.3Gi":               "want a number",
		"7.Gi":                  "want a number",
		".":                     "want a number",
		"0":                     "more than zero",
		"0Gi":                   "more than zero",
		"16Ei":                  "too large",
		"18446744073709551616":  "too large",
		strings.Repeat("1", 65): "at most 64",
	} {
		_, err := ParseBytes(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBytes(%q) = %v, want error containing %q", in, err, want)
		}
	}
}

// FuzzParseBytes: annotations come from users; parsing must never panic, and
// whatever it accepts re-parses to the same value once written in bytes.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"7Gi", "7.5G", "0.1", "18446744073709551615", "1.2.3", "16Ei"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseBytes(s)
		if err != nil {
			return
		}
		if v == 0 {
			t.Fatalf("%q accepted as zero bytes", s)
		}
		back, err := ParseBytes(strconv.FormatUint(v, 10))
		if err != nil || back != v {
			t.Fatalf("%q = %d, re-parsed as %d, %v", s, v, back, err)
		}
	})
}
