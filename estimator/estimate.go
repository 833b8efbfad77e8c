package estimator

import (
	"errors"
	"fmt"
	"strings"
)

// Source names where a memory need came from.
type Source string

const (
	SourceDeclared Source = "declared"
	SourceFormula  Source = "formula"
	SourceHistory  Source = "history peak"
)

// Workload is what is known about a workload before it runs.
type Workload struct {
	// Key identifies runs of the same workload in History.
	Key string
	// Annotations are the pod's; AnnotationMemory is read from them.
	Annotations map[string]string
	// Model, when set, sizes the workload by formula.
	Model *Model
}

// Estimator picks first profiles for one GPU model.
type Estimator struct {
	// GPU is the model's display name used in explanations ("H100-80GB").
	GPU string
	// Profiles are the model's profiles, in any order.
	Profiles []ProfileSize
	// ContextBytes is the CUDA context overhead added to every need.
	ContextBytes uint64
	// Margin is the headroom added to estimated needs (formula, history);
	// a declared value is taken as the user's own, margin included.
	Margin float64
	// History, when set, supplies peaks of earlier runs.
	History *History
}

// Choice is the estimator's answer.
type Choice struct {
	Profile ProfileSize
	Source  Source
	Need    Need
	// Explanation is one line for events and logs.
	Explanation string
}

// ErrNoHint means the workload declares nothing, has no model description
// and no history: there is nothing to size it by.
var ErrNoHint = errors.New("no memory hint: no " + AnnotationMemory + " annotation, model description or history")

// ErrTooLarge means no profile holds the need; the Choice still names the
// largest profile and explains the shortfall.
var ErrTooLarge = errors.New("no profile is large enough")

// Estimate picks the tightest profile for w. A declared annotation wins over
// the formula, because the user knows things the formula does not (custom
// kernels, other libraries). History then overrides either when an earlier
// run peaked higher: that run proved the lower number wrong.
func (e *Estimator) Estimate(w Workload) (Choice, error) {
	if len(e.Profiles) == 0 {
		return Choice{}, errors.New("estimator: no profiles for " + e.gpu())
	}
	var c Choice
	if v, ok := w.Annotations[AnnotationMemory]; ok {
		b, err := ParseBytes(strings.TrimSpace(v))
		if err != nil {
			return Choice{}, fmt.Errorf("annotation %s: %w", AnnotationMemory, err)
		}
		c.Source, c.Need = SourceDeclared, Need{Bytes: b}
	} else if w.Model != nil {
		bd, err := w.Model.Estimate()
		if err != nil {
			return Choice{}, err
		}
		c.Source, c.Need = SourceFormula, Need{Bytes: bd.Total(), Margin: e.Margin}
	}
	overrode := ""
	if e.History != nil && w.Key != "" {
		if peak, ok := e.History.Peak(w.Key); ok && peak > c.Need.Bytes {
			if c.Source != "" {
				overrode = fmt.Sprintf(" (over %s %s)", FormatBytes(c.Need.Bytes), c.Source)
			}
			c.Source, c.Need = SourceHistory, Need{Bytes: peak, Margin: e.Margin}
		}
	}
	if c.Source == "" {
		return Choice{}, ErrNoHint
	}
	c.Need.ContextBytes = e.ContextBytes
	prof, ok := Pick(e.Profiles, c.Need.Total())
	c.Profile = prof
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s%s", FormatBytes(c.Need.Bytes), c.Source, overrode)
	if c.Need.Margin > 0 {
		fmt.Fprintf(&sb, " + %.0f%% margin", 100*c.Need.Margin)
	}
	if c.Need.ContextBytes > 0 {
		fmt.Fprintf(&sb, " + %s context", FormatBytes(c.Need.ContextBytes))
	}
	if !ok {
		fmt.Fprintf(&sb, " = %s: more than the largest profile %s (%s) on %s",
			FormatBytes(c.Need.Total()), prof.Name, FormatBytes(prof.MemoryBytes), e.gpu())
		c.Explanation = sb.String()
		return c, fmt.Errorf("%w: %s", ErrTooLarge, c.Explanation)
	}
	fmt.Fprintf(&sb, " → %s on %s", prof.Name, e.gpu())
	c.Explanation = sb.String()
	return c, nil
}

func (e *Estimator) gpu() string {
	if e.GPU == "" {
		return "this GPU"
	}
	return e.GPU
}
