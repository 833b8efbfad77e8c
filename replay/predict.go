package replay

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"time"

	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/predictor"
)

// sizer is policy 5's use of the real estimator and predictor: the first
// profile comes from the estimator (declared memory, overridden by the peak
// of earlier runs of the same workload key), and every run's memory series
// goes through the predictor, which may mark it before it runs out. With
// the history alone (Policy.Learn) it records only what runs that ran out
// of memory, were marked, or outgrew their declaration showed, and the
// predictor watches only the runs sized from a declared memory.
type sizer struct {
	model *Model
	est   *estimator.Estimator
	hist  *estimator.History
	seed  int64
	// learned counts the history's changes, so a waiting job is re-sized
	// only when something was learned since it last was.
	learned uint64
	// predict is whether the estimator, with its margin, sizes runs and
	// the predictor watches every one; false for the history alone
	// (fromHistory, watches).
	predict bool
}

func newSizer(model *Model, dir string, seed int64, predict bool) (*sizer, error) {
	h, err := estimator.OpenHistory(filepath.Join(dir, "history.json"))
	if err != nil {
		return nil, err
	}
	est := &estimator.Estimator{GPU: model.Name, Profiles: model.sizes, Margin: 0.10, History: h}
	return &sizer{model: model, est: est, hist: h, seed: seed, predict: predict}, nil
}

// initial is the first profile: the estimator's choice from the declared
// memory and the key's history. A job that names a profile keeps it (the
// user asked for those compute slices) unless the history proves it too
// small: the declared memory or the key's recorded peak is more than the
// profile holds. Then the estimator's larger choice wins, as the admission
// webhook would rewrite the request. The estimator's margin over a recorded
// peak that fits does not count against a named profile.
func (s *sizer) initial(j *Job) Profile {
	if !s.predict {
		return s.fromHistory(j)
	}
	c, err := s.est.Estimate(estimator.Workload{
		Key:         j.Key,
		Annotations: map[string]string{estimator.AnnotationMemory: strconv.FormatUint(declared(j), 10)},
	})
	est, ok := s.model.Profile(c.Profile.Name)
	if (err != nil && !errors.Is(err, estimator.ErrTooLarge)) || !ok {
		// Validation guarantees a parseable hint; fall back to the baseline.
		est = s.model.Pick(declared(j))
	}
	if named, ok := s.model.Profile(j.Profile); ok {
		need := declared(j)
		if peak, ok := s.hist.Peak(j.Key); ok {
			need = max(need, peak)
		}
		if named.Memory >= need || named.Memory >= est.Memory {
			return named
		}
	}
	return est
}

// fromHistory is the first profile under Policy.Learn: the profile the
// job asks for (by name, else the tightest holding its declared memory)
// while that holds both the declared memory and the key's recorded need,
// else the tightest holding the larger of the two (the whole GPU when
// nothing does). No margin is added: the history holds only needs shown by
// runs that ran out, were moved by the predictor, or outgrew their
// declaration.
func (s *sizer) fromHistory(j *Job) Profile {
	asked := s.model.asked(j)
	need := declared(j)
	if peak, ok := s.hist.Peak(j.Key); ok {
		need = max(need, peak)
	}
	if asked.Memory >= need {
		return asked
	}
	if p := s.model.Pick(need); p.Memory >= need {
		return p
	}
	return s.model.Full
}

// watches reports whether the predictor follows j's runs: every run with
// the estimator (Policy.Predict); with the history alone (Policy.Learn),
// only those of a job that names no profile, whose instance migpro chose
// from the memory its user declared. A named profile is the user's choice
// of compute slices, and a forecast is not proof that it is too small: a
// run that holds 99% of its instance throughout, seen through noisy
// telemetry, can be marked though it fits. Such a job moves up only when it
// actually runs out.
func (s *sizer) watches(j *Job) bool {
	return s.predict || j.Profile == ""
}

// noiseSD is the sample noise the predictor sees, as a fraction of the
// job's peak: telemetry is never a clean line.
const noiseSD = 0.003

// mark replays the run's memory series, one sample per iteration until the
// OOM point, through a fresh predictor sized for the instance. It returns the
// progress at which the predictor marks the run and the profile it
// recommends and the peak it forecast, or false when it does not mark before
// the OOM or the end.
func (s *sizer) mark(j *jobState, on Profile, oomAt float64) (float64, Profile, uint64, bool) {
	iters := j.job.iters()
	pr, err := predictor.New(predictor.Config{Capacity: on.Memory, Horizon: float64(iters), Profiles: s.model.sizes})
	if err != nil {
		return 0, Profile{}, 0, false
	}
	rng := rand.New(rand.NewPCG(uint64(s.seed), uint64(j.idx)<<20|uint64(j.attempts)))
	sd := noiseSD * float64(j.job.Mem.Peak)
	for i := 1; i <= iters; i++ {
		p := float64(i) / float64(iters)
		if p >= oomAt || p >= 1 {
			break
		}
		used := max(0, j.job.Mem.At(p)+rng.NormFloat64()*sd)
		d, marked := pr.Observe(predictor.Sample{T: float64(i), Used: uint64(used)})
		if !marked {
			continue
		}
		prof, ok := s.model.Profile(d.Profile)
		if !ok || !d.Fits {
			prof = s.model.Full
		}
		return p, prof, d.Forecast, true
	}
	return 0, Profile{}, 0, false
}

// learn records bytes as what key's workload needs, when it is more than
// the history holds: a completed run's peak, or what a run that had to
// restart showed (the predictor's forecast when it moved the run, else more
// than the instance it ran out of). Later runs of the same key, those
// already waiting included, then start on a profile that holds it. The store
// is written only when the peak grows (it keeps the maximum anyway), which
// keeps a long stream from rewriting the file on every completion.
func (s *sizer) learn(key string, bytes uint64, now float64) error {
	if key == "" || bytes == 0 {
		return nil
	}
	if old, ok := s.hist.Peak(key); ok && old >= bytes {
		return nil
	}
	at := time.Unix(0, 0).Add(time.Duration(now * float64(time.Second)))
	if err := s.hist.Record(key, bytes, at); err != nil {
		return fmt.Errorf("record the peak of %s: %w", key, err)
	}
	s.learned++
	return nil
}
