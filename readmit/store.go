package readmit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// Controller identifies the object that recreates a pod: the pod's
// controller ownerReference.
type Controller struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
}

func (c Controller) String() string { return c.Kind + "/" + c.Name }

// Rule says: a container (any when Container is empty) asking for resource
// From should get resource To instead.
type Rule struct {
	Container     string `json:"container,omitempty"`
	From          string `json:"from"`
	To            string `json:"to"`
	ForecastBytes uint64 `json:"forecastBytes,omitempty"`
	Reason        string `json:"reason,omitempty"`
	Pod           string `json:"pod,omitempty"`
	// PodUID is the marked pod's UID: a StatefulSet's replacement has its
	// predecessor's name, not its UID.
	PodUID types.UID `json:"podUID,omitempty"`
	Node   string    `json:"node,omitempty"`
	At     time.Time `json:"at"`
	// FitRuns counts the consecutive finished runs whose peak fit From
	// again (RecordRun); at DecayRuns the rule is dropped.
	FitRuns int `json:"fitRuns,omitempty"`
	// Advised is set on a rule recorded in advise mode: it is kept for the
	// admin to read, and the webhook does not apply it.
	Advised bool `json:"advised,omitempty"`
}

// Recommendation is everything recorded for one controller: pods of
// Controller asking for Rule.From should get Rule.To.
type Recommendation struct {
	Controller Controller `json:"controller"`
	Rules      []Rule     `json:"rules"`
}

// maxChain bounds how many rules a lookup follows (1g → 2g → 3g ...).
const maxChain = 8

// Target is the resource a container asking for from should get, following
// chains (a pod moved to 2g and marked again gets a 2g → 3g rule, which also
// applies to the template's 1g). ok is false when no rule applies.
func (r *Recommendation) Target(container, from string) (to string, ok bool) {
	cur := from
	for range maxChain {
		next := ""
		for _, rule := range r.Rules {
			if !rule.Advised && rule.From == cur && (rule.Container == "" || rule.Container == container) {
				next = rule.To
			}
		}
		if next == "" || next == from {
			break
		}
		cur, ok = next, true
	}
	return cur, ok && cur != from
}

// set adds or replaces the rule for (container, from); it reports whether
// anything changed.
func (r *Recommendation) set(rule Rule) bool {
	for i, old := range r.Rules {
		if old.Container == rule.Container && old.From == rule.From {
			// An advised rule never replaces the applied rule it repeats.
			if old.To == rule.To && (old.Advised == rule.Advised || !old.Advised) {
				return false
			}
			r.Rules[i] = rule
			return true
		}
	}
	r.Rules = append(r.Rules, rule)
	return true
}

// Store keeps recommendations in the API server: one ConfigMap per controller
// (StoreName), in the controller's namespace, owned by the controller so it is
// garbage-collected with it.
type Store struct {
	Client Client
	// ReadByPatch reads with an empty patch instead of get (the agent's
	// identity, see readConfigMap).
	ReadByPatch bool
}

// Get returns the recommendation for a controller (keyed by its Owner), nil
// when there is none,
// when the ConfigMap of that name is not migpro's (it lacks the managed-by
// and recommendation labels), or when the one stored belongs to an older
// controller of the same name.
func (s Store) Get(ctx context.Context, namespace string, c Controller) (*Recommendation, error) {
	return s.getOwned(ctx, namespace, s.Owner(ctx, namespace, c))
}

// getOwned is Get for a controller already resolved to its Owner.
func (s Store) getOwned(ctx context.Context, namespace string, c Controller) (*Recommendation, error) {
	cm, err := s.readConfigMap(ctx, namespace, StoreName(c.Kind, c.Name))
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read recommendation %s/%s: %w", namespace, StoreName(c.Kind, c.Name), err)
	}
	if !managed(cm) {
		return nil, nil
	}
	rec, err := decodeRecommendation(cm)
	if err != nil {
		return nil, err
	}
	if rec.Controller.UID != c.UID || rec.Controller.Kind != c.Kind || rec.Controller.Name != c.Name {
		return nil, nil
	}
	return rec, nil
}

// managed reports whether migpro wrote cm: it carries both labels.
func managed(cm *corev1.ConfigMap) bool {
	return cm.Labels[LabelRecommendation] == "true" && cm.Labels[LabelManagedBy] == ManagedBy
}

func decodeRecommendation(cm *corev1.ConfigMap) (*Recommendation, error) {
	var rec Recommendation
	if err := json.Unmarshal([]byte(cm.Data[RecommendationKey]), &rec); err != nil {
		return nil, fmt.Errorf("recommendation %s/%s: bad %s: %w", cm.Namespace, cm.Name, RecommendationKey, err)
	}
	return &rec, nil
}

// Record adds rule to the controller's recommendation with optimistic
// concurrency: a concurrent writer makes it re-read and retry (Conflict on
// update, AlreadyExists on create). It reports whether anything was written.
func (s Store) Record(ctx context.Context, namespace string, c Controller, rule Rule) (changed bool, err error) {
	name := StoreName(c.Kind, c.Name)
	cms := s.Client.CoreV1().ConfigMaps(namespace)
	err = retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		changed = false
		cm, err := s.readConfigMap(ctx, namespace, name)
		if apierrors.IsNotFound(err) {
			rec := Recommendation{Controller: c, Rules: []Rule{rule}}
			cm, err = newStoreConfigMap(namespace, name, rec)
			if err != nil {
				return err
			}
			if _, err = cms.Create(ctx, cm, metav1.CreateOptions{}); err == nil {
				changed = true
			}
			return err
		}
		if err != nil {
			return err
		}
		rec, derr := decodeRecommendation(cm)
		if derr != nil || rec.Controller.UID != c.UID {
			// Unreadable, or left by an older controller of that name: start over.
			rec = &Recommendation{Controller: c}
			cm.OwnerReferences = ownerRefs(c)
		}
		if !rec.set(rule) && derr == nil {
			return nil
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[LabelRecommendation], cm.Labels[LabelManagedBy] = "true", ManagedBy
		cm.Data[RecommendationKey] = string(b)
		// cm carries the resourceVersion read above: a concurrent write fails with Conflict.
		if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err == nil {
			changed = true
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record recommendation %s/%s for %s: %w", namespace, name, c, err)
	}
	return changed, nil
}

func newStoreConfigMap(namespace, name string, rec Recommendation) (*corev1.ConfigMap, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace,
			Labels:          map[string]string{LabelRecommendation: "true", LabelManagedBy: ManagedBy},
			OwnerReferences: ownerRefs(rec.Controller),
		},
		Data: map[string]string{RecommendationKey: string(b)},
	}, nil
}

// ownerRefs makes the controller the ConfigMap's owner, so the garbage
// collector removes the recommendation with the controller. It is not a
// controller reference and does not block the owner's deletion (which
// would need delete permission on the owner).
func ownerRefs(c Controller) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: c.APIVersion, Kind: c.Kind, Name: c.Name, UID: c.UID}}
}
