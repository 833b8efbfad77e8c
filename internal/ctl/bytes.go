package ctl

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// byteSpellings are the units people type on a command line that
// Kubernetes spells without the B: 10GiB is 10Gi, 10GB is 10G.
var byteSpellings = []struct{ long, short string }{
	{"KiB", "Ki"}, {"MiB", "Mi"}, {"GiB", "Gi"}, {"TiB", "Ti"}, {"PiB", "Pi"}, {"EiB", "Ei"},
	{"kB", "k"}, {"KB", "k"}, {"MB", "M"}, {"GB", "G"}, {"TB", "T"}, {"PB", "P"}, {"EB", "E"},
}

var oneByte = resource.MustParse("1")

// ParseBytes is the one parser of byte quantities on migpro's command
// lines: a Kubernetes quantity (10Gi, 10G, 10737418240), or the same with
// a B (10GiB, 10GB). A fraction of a byte rounds up; less than one byte is
// refused.
func ParseBytes(s string) (uint64, error) {
	q := strings.TrimSpace(s)
	for _, sp := range byteSpellings {
		if strings.HasSuffix(q, sp.long) {
			q = strings.TrimSuffix(q, sp.long) + sp.short
			break
		}
	}
	qty, err := resource.ParseQuantity(q)
	if err != nil {
		return 0, fmt.Errorf("%q: want bytes or a size such as 10Gi, 10GiB or 10GB", s)
	}
	if qty.Cmp(oneByte) < 0 {
		return 0, fmt.Errorf("%q: want at least one byte", s)
	}
	v, ok := qty.AsInt64()
	if !ok {
		v = qty.Value() // rounds a fraction up; saturates past 8Ei
	}
	return uint64(v), nil
}
