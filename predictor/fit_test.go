package predictor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// direct fits y = a·x + b from scratch in two passes, the reference for the
// incremental fit. x is shifted to start at zero so that the reference itself
// does not lose digits; b is for the shifted x.
func direct(xs, ys []float64) (a, b, sigma float64) {
	x0 := xs[0]
	xs = append([]float64(nil), xs...)
	for i := range xs {
		xs[i] -= x0
	}
	n := float64(len(xs))
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	a = sxy / sxx
	b = my - a*mx
	var sse float64
	for i := range xs {
		r := ys[i] - (a*xs[i] + b)
		sse += r * r
	}
	return a, b, math.Sqrt(sse / (n - 2))
}

func near(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %g, want %g", what, got, want)
	}
}

func TestLinFitMatchesDirectFit(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	// Unix-time x and byte-sized y: the magnitudes that break raw sums.
	var xs, ys []float64
	var f linFit
	for i := range 200 {
		x := 1.7e9 + float64(i)*0.1
		y := 4e9 + 3e7*float64(i) + r.NormFloat64()*2e7
		xs, ys = append(xs, x), append(ys, y)
		f.add(x, y)
	}
	a, b, sd := direct(xs, ys)
	near(t, "slope", f.slope(), a, 1e-6)
	near(t, "value at last x", f.at(xs[199]), a*(xs[199]-xs[0])+b, 1e-9)
	near(t, "sigma", f.sigma(), sd, 1e-6)
}

func TestLinFitRemoveSlidesTheWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	const w = 24
	var xs, ys []float64
	var f linFit
	for i := range 5000 {
		x, y := float64(i), 1e9+float64(i%97)*1e7+r.NormFloat64()*1e7
		xs, ys = append(xs, x), append(ys, y)
		f.add(x, y)
		if len(xs) > w {
			f.remove(xs[len(xs)-w-1], ys[len(ys)-w-1])
		}
	}
	a, b, sd := direct(xs[len(xs)-w:], ys[len(ys)-w:])
	near(t, "slope", f.slope(), a, 1e-4)
	last := xs[len(xs)-w:]
	near(t, "value", f.at(last[w-1]), a*(last[w-1]-last[0])+b, 1e-6)
	near(t, "sigma", f.sigma(), sd, 1e-3)
}

func TestLinFitDegenerate(t *testing.T) {
	var f linFit
	if f.slope() != 0 || f.sigma() != 0 || !math.IsInf(f.slopeSE(), 1) {
		t.Fatalf("empty fit: slope %g sigma %g se %g", f.slope(), f.sigma(), f.slopeSE())
	}
	f.add(5, 10)
	f.add(5, 12) // same x: no slope can be fitted
	if f.slope() != 0 || f.at(100) != 11 {
		t.Errorf("vertical data: slope %g at %g, want 0 and the mean 11", f.slope(), f.at(100))
	}
	f.remove(5, 12)
	f.remove(5, 10)
	if f.n != 0 {
		t.Errorf("n after removing all = %g", f.n)
	}
}
