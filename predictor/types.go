package predictor

import (
	"errors"
	"fmt"
	"math"

	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/predictor/internal/ablate"
)

// Sample is one point of a container's memory series.
type Sample struct {
	// T is seconds or an iteration index; it must not go backwards.
	T float64
	// Used is the memory the GPU instance has given the container, the
	// quantity whose excess causes an OOM: in the agent, max(shim, NVML),
	// NVML's used memory (CUDA context plus the framework's pool, PyTorch's
	// reserved memory, not its allocated memory) and the shim's live
	// driver-level allocations. A cudaMalloc fails when the instance has no
	// free memory, whatever the framework keeps cached.
	Used uint64
	// Requested is the bytes the program asked its allocator for, when the
	// shim reports it; zero means unknown. Only the baseline uses it.
	Requested uint64
	// Allocs is how many driver allocation calls the program has made so
	// far, as the shim counts them (cumulative); zero means unknown, as for
	// a container without the shim. migpro reads the bytes a rise took per
	// call: weights load in calls of tens to hundreds of MiB, one per
	// tensor, while growth comes in the allocator's 2 and 20 MiB segments.
	Allocs uint64
}

// Algorithm selects how the series is read.
type Algorithm string

const (
	// Baseline is the plain algorithm: a fit from the start, forecast at
	// a known horizon, decided once at convergence.
	Baseline Algorithm = "baseline"
	// Migpro is the improved predictor: a windowed fit, time to OOM when the
	// horizon is unknown, and gates against warm-up, bursts and plateaus.
	Migpro Algorithm = "migpro"
)

// Z99 is the two-sided 99% normal quantile of the forecast's upper bound.
const Z99 = 2.576

// Config tunes a predictor. Zero fields take the documented defaults, so
// Config{Capacity: c} is a working migpro predictor.
type Config struct {
	Algorithm Algorithm
	// Capacity is the instance's usable memory in bytes. Required.
	Capacity uint64
	// Horizon is the expected end of the workload in T units; zero means
	// unknown. The baseline cannot run without it.
	Horizon float64
	// Z multiplies the residual standard deviation in the upper bound.
	// Default Z99.
	Z float64

	// Bin is the time bin, in T units, over which migpro's windows count:
	// every sample within one bin updates one point (the peak so far and the
	// bin's largest usage), so MinSamples, Window and Persist are numbers of
	// bins, spans of time, and a 10 Hz series is read as its 1 Hz one is.
	// Default 1 (one second when T is seconds; one iteration for the
	// iteration-indexed traces, which have one sample per bin).
	Bin float64

	// MinSamples is the number of samples (bins, for migpro) before any mark. Default 16 for
	// migpro: a ramp that stops after 15 samples (the first tooth of the
	// sawtooth trace) is indistinguishable from growth while it lasts, and at
	// 12 every seeded sawtooth was marked. Default 3 for the baseline, which
	// with a convergence window of 3 lets it mark at sample 5 or 6 of a
	// clean linear trace.
	MinSamples int

	// ConvergeWindow and ConvergeTol define the baseline's convergence: the
	// last ConvergeWindow forecasts lie within ConvergeTol of their mean
	// (relative). Defaults 3 and 0.05.
	ConvergeWindow int
	ConvergeTol    float64

	// Window is migpro's longest fit window in samples; it also fits
	// Window/2, /4 and /8. Default 48: its quarters (12 samples) see growth
	// in steps up to 12 samples apart, and its eighth (6 samples) reacts to
	// growth that starts late. A 96-sample window also caught steps 20 apart
	// but marked 1 in 1500 seeded burst traces, whose records can climb a
	// similar staircase.
	Window int
	// LeadFactor and MinLead set migpro's lead time when the horizon is
	// unknown: it marks when the time to OOM is under
	// max(MinLead, LeadFactor × elapsed). Tying the lead to the elapsed time
	// means a line is never extrapolated much further than it was observed.
	// Defaults 3 and 0. On the seeded traces 6 gains 2.5 points of lead with
	// no false mark; 3 is kept because a line observed for t is then never
	// trusted beyond 4t, and the gates, not the lead, are what keep quiet
	// series unmarked.
	LeadFactor float64
	MinLead    float64
	// Scales is how many windows migpro fits at once: Window, Window/2,
	// Window/4, Window/8. Default 4; 1 fits the longest window only (slower
	// to see growth that starts late).
	Scales int
	// BulkBytes, BulkLeadFactor and BlindLeadFactor tell a load from growth
	// by the driver allocation calls behind a window's rise. A rise that
	// took at least BulkBytes per call (weights copied tensor by tensor, a
	// cache reserved in one call) has a lead of BulkLeadFactor × elapsed; a
	// rise whose calls are unknown (no shim) BlindLeadFactor × elapsed;
	// growth in many smaller calls keeps LeadFactor. Defaults 64 MiB, and
	// LeadFactor for both factors (no difference); ForSeconds sets the
	// agent's.
	BulkBytes       float64
	BulkLeadFactor  float64
	BlindLeadFactor float64
	// EvictionTime is the time an eviction needs, in T units: the pod's
	// termination grace period plus a restart. With no horizon, migpro asks
	// whether the container runs out within it: it marks only when the
	// projected OOM is nearer than EvictionTime (and than the lead the
	// elapsed time allows), so a rise that stops before its OOM is that near
	// is never marked. Zero: no such bound (iteration-indexed traces);
	// ForSeconds sets DefaultEvictionTime.
	EvictionTime float64
	// NearTime is how near, in T units, an OOM projected from a run of
	// rises (see stairs) must be before migpro marks on it with no horizon;
	// never beyond EvictionTime. Zero turns the reading of runs off (as for
	// iteration-indexed traces); ForSeconds sets SecondsNearTime.
	NearTime float64
	// Persist is how many consecutive samples must agree before migpro marks;
	// this is the hysteresis against one-sample flukes. Default 3.
	Persist int

	// Profiles, ContextBytes and Margin choose the readmission profile:
	// the smallest profile holding forecast×(1+Margin)+ContextBytes.
	// Defaults: no profiles (no recommendation), 0 context, 0.10 margin.
	Profiles     []estimator.ProfileSize
	ContextBytes uint64
	Margin       float64

	// off switches readings off, for the tests that measure them
	// (predictor/internal/ablate); zero in every real use.
	off ablate.Switch
}

func init() {
	ablate.Without = func(cfg any, s ablate.Switch) any {
		c := cfg.(Config)
		c.off |= s
		return c
	}
}

// without reports whether reading s is switched off.
func (c *Config) without(s ablate.Switch) bool { return c.off&s != 0 }

func (c Config) withDefaults() (Config, error) {
	if c.Algorithm == "" {
		c.Algorithm = Migpro
	}
	if c.Algorithm != Baseline && c.Algorithm != Migpro {
		return c, fmt.Errorf("predictor: unknown algorithm %q (want %q or %q)", c.Algorithm, Baseline, Migpro)
	}
	if c.Capacity == 0 {
		return c, errors.New("predictor: capacity must be positive")
	}
	if c.Horizon < 0 || math.IsNaN(c.Horizon) || math.IsInf(c.Horizon, 0) {
		return c, fmt.Errorf("predictor: horizon %v must be a finite non-negative number", c.Horizon)
	}
	if c.Algorithm == Baseline && c.Horizon == 0 {
		return c, errors.New("predictor: the baseline algorithm needs a horizon")
	}
	if c.Z == 0 {
		c.Z = Z99
	}
	if c.MinSamples == 0 {
		c.MinSamples = 16
		if c.Algorithm == Baseline {
			c.MinSamples = 3
		}
	}
	if c.ConvergeWindow == 0 {
		c.ConvergeWindow = 3
	}
	if c.ConvergeWindow > maxConvergeWindow {
		return c, fmt.Errorf("predictor: convergence window %d over the limit %d", c.ConvergeWindow, maxConvergeWindow)
	}
	if c.ConvergeTol == 0 {
		c.ConvergeTol = 0.05
	}
	if c.Bin == 0 {
		c.Bin = 1
	}
	if !(c.Bin > 0) || math.IsInf(c.Bin, 0) {
		return c, fmt.Errorf("predictor: bin %v must be a positive number", c.Bin)
	}
	if c.Window == 0 {
		c.Window = 48
	}
	if c.Window < 8 {
		return c, fmt.Errorf("predictor: window %d too short (at least 8)", c.Window)
	}
	if c.LeadFactor == 0 {
		c.LeadFactor = 3
	}
	if c.BulkBytes == 0 {
		c.BulkBytes = 64 << 20
	}
	if c.BulkLeadFactor == 0 {
		c.BulkLeadFactor = c.LeadFactor
	}
	if c.BlindLeadFactor == 0 {
		c.BlindLeadFactor = c.LeadFactor
	}
	if c.Scales == 0 {
		c.Scales = scales
	}
	if c.Scales < 1 || c.Scales > scales {
		return c, fmt.Errorf("predictor: scales %d, want 1 to %d", c.Scales, scales)
	}
	if c.Persist == 0 {
		c.Persist = 3
	}
	if c.Margin == 0 {
		c.Margin = 0.10
	}
	if c.Z < 0 || c.MinSamples < 2 || c.ConvergeWindow < 2 || c.ConvergeTol < 0 ||
		c.LeadFactor < 0 || c.BulkLeadFactor < 0 || c.BlindLeadFactor < 0 || !(c.BulkBytes > 0) || c.MinLead < 0 || !(c.NearTime >= 0) || math.IsInf(c.NearTime, 0) || !(c.EvictionTime >= 0) || math.IsInf(c.EvictionTime, 0) || c.Persist < 1 || c.Margin < 0 {
		return c, fmt.Errorf("predictor: invalid config %+v", c)
	}
	return c, nil
}

const maxConvergeWindow = 16

// The settings for a series in seconds from the container's start, as the
// agent feeds it (ForSeconds). See ForSeconds for why each holds.
const (
	SecondsLeadFactor      = 0.25
	SecondsBulkLeadFactor  = 0.08
	SecondsBlindLeadFactor = 0.12
	SecondsMinLead         = 0
	SecondsBin             = 2
	SecondsMinSamples      = 12
	// DefaultEvictionTime is Kubernetes' default termination grace period
	// (30 s) plus 30 s to restart on a larger instance.
	DefaultEvictionTime = 60
	// SecondsNearTime: a run of rises marks when its OOM is projected within
	// 10 s. A warm-up that stops under capacity stops farther from it.
	SecondsNearTime = 10
)

// ForSeconds returns c with the settings for a series in seconds from the
// container's start wherever c leaves them zero; the other defaults are those
// of an iteration-indexed trace:
//   - Bin 2 s: the windows, MinSamples and Persist count spans of time, so
//     the shim's 10 Hz and NVML's 1 Hz read alike.
//   - MinSamples 12 bins (24 s) before any mark.
//   - LeadFactor 0.25 for the whole run: the bound must cross capacity
//     within a quarter of the time the series has been watched. Such a
//     series starts with model loading, and a load that starts at the
//     context cannot reach a mark unless it fills about four fifths of the
//     instance, whatever its speed and however long it lasts.
//   - BulkLeadFactor 0.08 and BlindLeadFactor 0.12: a rise made of tensor-
//     sized calls, or whose calls are unknown, may be a load that ends just
//     under capacity, which 0.25 would mark.
func ForSeconds(c Config) Config {
	if c.LeadFactor == 0 {
		c.LeadFactor = SecondsLeadFactor
	}
	if c.BulkLeadFactor == 0 {
		c.BulkLeadFactor = SecondsBulkLeadFactor
	}
	if c.BlindLeadFactor == 0 {
		c.BlindLeadFactor = SecondsBlindLeadFactor
	}
	if c.MinLead == 0 {
		c.MinLead = SecondsMinLead
	}
	if c.Bin == 0 {
		c.Bin = SecondsBin
	}
	if c.EvictionTime == 0 {
		c.EvictionTime = DefaultEvictionTime
	}
	if c.NearTime == 0 {
		c.NearTime = SecondsNearTime
	}
	if c.MinSamples == 0 && c.Algorithm != Baseline {
		c.MinSamples = SecondsMinSamples
	}
	return c
}
