package agent

import (
	"testing"

	"github.com/migpro/migpro/estimator"
)

// A run fits a profile when its peak, with the predictor's margin, does; a
// run the predictor marked, or a profile the GPU lacks, fits nothing.
func TestEndFitsAProfileWithTheMargin(t *testing.T) {
	const gib = uint64(1) << 30
	profiles := []estimator.ProfileSize{{Name: "1g.5gb", MemoryBytes: 5 * gib}, {Name: "1g.10gb+me", MemoryBytes: 10 * gib}}
	for _, tc := range []struct {
		name    string
		end     End
		profile string
		fits    bool
	}{
		{"well under", End{PeakBytes: 2 * gib}, "1g.5gb", true},
		{"under, but not with the margin", End{PeakBytes: 47 * gib / 10}, "1g.5gb", false},
		{"the resource label of a +me profile", End{PeakBytes: 2 * gib}, "1g.10gb.me", true},
		{"a profile the GPU lacks", End{PeakBytes: 1}, "7g.80gb", false},
		{"a marked run", End{PeakBytes: gib, Marked: true}, "1g.5gb", false},
		{"no peak", End{}, "1g.5gb", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.end
			e.Profiles, e.Margin = profiles, defaultMargin
			if got := e.Fits(tc.profile); got != tc.fits {
				t.Errorf("Fits(%s) with peak %d = %v, want %v", tc.profile, e.PeakBytes, got, tc.fits)
			}
		})
	}
}
