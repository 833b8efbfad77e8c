package estimator

import (
	"fmt"
	"math/big"
	"strings"
)

// AnnotationMemory is the pod annotation that declares a workload's GPU
// memory, e.g. "7Gi".
const AnnotationMemory = "migpro.dev/gpu-memory"

const maxQuantityLen = 64

// suffixes are the Kubernetes quantity suffixes that make sense for bytes.
// The milli suffix "m" and exponents ("1e9") are left out on purpose: a
// thousandth of a byte is always a typo for "M", and exponent forms are
// rare enough in annotations that refusing them beats guessing.
var suffixes = map[string]int64{
	"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60,
}

// ParseBytes parses a Kubernetes-style byte quantity ("7Gi", "7.5G",
// "1048576") strictly: digits with at most one decimal point, then one
// suffix. Fractions that do not make whole bytes round up, as Kubernetes
// does. Anything else (signs, spaces, "7gb", "1m", overflow) is an error that
// says what was expected.
func ParseBytes(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty quantity, want e.g. 7Gi or 8G")
	}
	// Annotations are user input; a byte count never needs more digits than
	// this, and big-number parsing of a megabyte of them would be slow.
	if len(s) > maxQuantityLen {
		return 0, fmt.Errorf("quantity of %d characters, at most %d", len(s), maxQuantityLen)
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, suf := s[:i], s[i:]
	mult, ok := suffixes[suf]
	if !ok {
		hint := ""
		if low := strings.ToLower(suf); low == "gb" || low == "gib" || low == "g" {
			hint = " (Kubernetes spells it G or Gi)"
		}
		return 0, fmt.Errorf("quantity %q: unknown suffix %q%s, want one of k M G T P E Ki Mi Gi Ti Pi Ei", s, suf, hint)
	}
	if num == "" || num == "." || strings.Count(num, ".") > 1 || strings.HasSuffix(num, ".") {
		return 0, fmt.Errorf("quantity %q: want a number such as 7 or 7.5 before the suffix", s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("quantity %q: %q is not a number", s, num)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	// Round up to whole bytes.
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsUint64() {
		return 0, fmt.Errorf("quantity %q: too large", s)
	}
	if q.Sign() == 0 {
		return 0, fmt.Errorf("quantity %q: must be more than zero bytes", s)
	}
	return q.Uint64(), nil
}
