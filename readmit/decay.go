package readmit

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// DecayRuns is how many consecutive runs must fit the smaller profile before
// a rule moving a container off it is dropped.
const DecayRuns = 3

// Run is one finished run of an owner's container, for RecordRun: the peak it
// reached and whether that peak (with the estimator's margin and context)
// fits each profile a rule moved it away from.
type Run struct {
	Container string
	PeakBytes uint64
	// FitsFrom reports whether the peak fits the MIG resource a rule moves
	// the container away from (the caller knows the profiles' memory).
	FitsFrom func(from string) bool
}

// RecordRun counts a finished run against the owner's rules for its
// container: a run whose peak fits a rule's From adds one to the rule's
// FitRuns, a run that does not resets it, and a rule reaching DecayRuns is
// dropped, so the owner's next pods ask for the smaller profile again. It
// returns the rules dropped. Nothing stays oversized forever, and one run
// that happened to stay small does not undo a move.
func (s Store) RecordRun(ctx context.Context, namespace string, c Controller, run Run) (dropped []Rule, err error) {
	c = s.Owner(ctx, namespace, c)
	name := StoreName(c.Kind, c.Name)
	cms := s.Client.CoreV1().ConfigMaps(namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dropped = nil
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if !managed(cm) {
			return nil
		}
		rec, err := decodeRecommendation(cm)
		if err != nil || rec.Controller.UID != c.UID {
			return nil // unreadable or stale: nothing to decay
		}
		kept := rec.Rules[:0]
		changed := false
		for _, r := range rec.Rules {
			if r.Container != "" && r.Container != run.Container {
				kept = append(kept, r)
				continue
			}
			old := r.FitRuns
			if run.FitsFrom != nil && run.FitsFrom(r.From) {
				r.FitRuns++
			} else {
				r.FitRuns = 0
			}
			changed = changed || r.FitRuns != old
			if r.FitRuns >= DecayRuns {
				dropped = append(dropped, r)
				changed = true
				continue
			}
			kept = append(kept, r)
		}
		if !changed {
			return nil
		}
		rec.Rules = kept
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		cm.Data[RecommendationKey] = string(b)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record run of %s in %s/%s: %w", c, namespace, name, err)
	}
	return dropped, nil
}
