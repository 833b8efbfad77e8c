package main

import (
	"strings"
	"testing"
)

// estimate --memory and predict --capacity read bytes with one parser: the
// spellings one accepts, the other accepts, with the same value, and a bad
// one names the flag the user wrote.
func TestOneByteParser(t *testing.T) {
	same := func(args ...string) string {
		t.Helper()
		out, errOut, code := migctl(args...)
		if code != 0 {
			t.Fatalf("migctl %q: exit %d: %s", args, code, errOut)
		}
		return out
	}
	if a, b := same("estimate", "--gpu", "h100-80gb", "--memory", "10GiB"), same("estimate", "--gpu", "h100-80gb", "--memory", "10Gi"); a != b {
		t.Errorf("estimate --memory 10GiB says %q, 10Gi says %q", a, b)
	}
	if a, b := same("estimate", "--gpu", "h100-80gb", "--memory", "10GB"), same("estimate", "--gpu", "h100-80gb", "--memory", "10G"); a != b {
		t.Errorf("estimate --memory 10GB says %q, 10G says %q", a, b)
	}
	trace := traceDir + "/flat.csv"
	if a, b := same("predict", "--capacity", "10GiB", trace), same("predict", "--capacity", "10Gi", trace); a != b {
		t.Errorf("predict --capacity 10GiB and 10Gi differ:\n%s\n%s", a, b)
	}
	for flag, args := range map[string][]string{
		"--memory":   {"estimate", "--gpu", "h100-80gb", "--memory", "ten"},
		"--capacity": {"predict", "--capacity", "ten", trace},
	} {
		_, errOut, code := migctl(args...)
		if code != 2 || !strings.Contains(errOut, flag+`: "ten"`) || strings.Contains(errOut, "annotation") {
			t.Errorf("migctl %q: exit %d, %q; want 2 naming %s", args, code, errOut, flag)
		}
	}
}
