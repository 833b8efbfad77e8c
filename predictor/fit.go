package predictor

import "math"

// linFit is an incremental least-squares fit of y = a·x + b. It keeps centred
// moments (Welford's update) instead of raw sums because x can be a Unix
// timestamp and y a byte count: raw Σx² and Σy² would lose every significant
// digit of the residual variance in float64. x is also taken relative to the
// first point added, so the means are small numbers with fine resolution.
type linFit struct {
	ox, oy        float64 // origin: the first point since the last reset
	n             float64
	mx, my        float64
	cxx, cxy, cyy float64
}

func (f *linFit) reset() { *f = linFit{} }

func (f *linFit) add(x, y float64) {
	if f.n == 0 {
		f.ox, f.oy = x, y
	}
	x, y = x-f.ox, y-f.oy
	f.n++
	dx := x - f.mx
	f.mx += dx / f.n
	dy := y - f.my
	f.my += dy / f.n
	// The mixed update uses the old dx and the new mean, which keeps the
	// co-moments exact rather than approximately updated.
	f.cxx += dx * (x - f.mx)
	f.cxy += dx * (y - f.my)
	f.cyy += dy * (y - f.my)
}

// remove undoes add for a point that is in the fit. Used by the sliding
// window; callers refresh the fit now and then to shed accumulated rounding.
func (f *linFit) remove(x, y float64) {
	if f.n <= 1 {
		f.reset()
		return
	}
	x, y = x-f.ox, y-f.oy
	n1 := f.n - 1
	mx := (f.n*f.mx - x) / n1
	my := (f.n*f.my - y) / n1
	f.cxx -= (x - mx) * (x - f.mx)
	f.cxy -= (x - mx) * (y - f.my)
	f.cyy -= (y - my) * (y - f.my)
	f.n, f.mx, f.my = n1, mx, my
	if f.cxx < 0 {
		f.cxx = 0
	}
	if f.cyy < 0 {
		f.cyy = 0
	}
}

// slope is a; zero while x has not varied.
func (f *linFit) slope() float64 {
	if f.cxx <= 0 {
		return 0
	}
	return f.cxy / f.cxx
}

// at evaluates the fitted line at x, anchored at the means so that a large x
// offset never meets a large intercept.
func (f *linFit) at(x float64) float64 { return f.oy + f.my + f.slope()*(x-f.ox-f.mx) }

// sigma is the residuals' standard deviation with n-2 degrees of freedom,
// the usual unbiased estimate for a two-parameter fit.
func (f *linFit) sigma() float64 {
	if f.n < 3 {
		return 0
	}
	sse := f.cyy
	if f.cxx > 0 {
		sse -= f.cxy * f.cxy / f.cxx
	}
	if sse <= 0 {
		return 0
	}
	return math.Sqrt(sse / (f.n - 2))
}

// slopeSE is the standard error of the slope.
func (f *linFit) slopeSE() float64 {
	if f.cxx <= 0 {
		return math.Inf(1)
	}
	return f.sigma() / math.Sqrt(f.cxx)
}
