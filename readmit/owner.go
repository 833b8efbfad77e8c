package readmit

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/defaults"
)

// Owner returns the top-level controller recommendations are keyed by: the
// Deployment of a ReplicaSet, so that a recommendation survives a rollout
// (each rollout makes a new ReplicaSet); any other controller (StatefulSet,
// Job, a bare ReplicaSet) is its own owner. When the ReplicaSet cannot be
// read (gone, or no permission), c itself is returned: the recommendation is
// then keyed as before.
func (s Store) Owner(ctx context.Context, namespace string, c Controller) Controller {
	if c.Kind != "ReplicaSet" || c.APIVersion != "apps/v1" {
		return c
	}
	rs, err := s.Client.AppsV1().ReplicaSets(namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil || rs.UID != c.UID {
		return c
	}
	d := metav1.GetControllerOf(rs)
	if d == nil || d.Kind != "Deployment" || d.APIVersion != "apps/v1" {
		return c
	}
	return Controller{APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name, UID: d.UID}
}

// loops returns why evicting pod would repeat a move that did not happen:
// the owner already has a rule moving this container off from, recorded for
// another pod, and this pod, created in or after the second of that rule,
// still asks for from (the webhook was bypassed or failed open). Evicting
// again would only restart it on the same profile, so the Marker stops
// there. "" means no loop.
//
// Both timestamps are whole seconds and a replacement is normally created in
// the second its predecessor was evicted, so a pod created in the rule's
// second counts as created after it. "Another pod" is told by UID where the
// rule records one: a StatefulSet's replacement has its predecessor's name.
// A pod that already asks for the rule's target (or a larger profile) does
// not ask for from and never matches: moving it on is a new reason, a
// further rule in the chain.
func (m *Marker) loops(ctx context.Context, pod *corev1.Pod, container, from string, out Outcome) string {
	rec, err := m.store.getOwned(ctx, pod.Namespace, out.Controller)
	if err != nil || rec == nil {
		return ""
	}
	for _, r := range rec.Rules {
		if r.From != from || (r.Container != "" && r.Container != container) || samePod(r, pod) {
			continue
		}
		if !r.At.IsZero() && !pod.CreationTimestamp.Time.Before(r.At) {
			return fmt.Sprintf("%s was already moved from %s to %s for the same reason (pod %s), and this pod, created after that, still asks for %s: the readmission webhook did not rewrite it",
				out.Controller, from, r.To, r.Pod, from)
		}
	}
	return ""
}

// samePod reports whether rule r was recorded for pod itself (a second mark
// of the same pod): by UID when the rule has one, else by name.
func samePod(r Rule, pod *corev1.Pod) bool {
	if r.PodUID != "" {
		return r.PodUID == pod.UID
	}
	return r.Pod == pod.Name
}

// offered reports whether any node of the cluster advertises resource. A
// node's capacity lists every resource whose device plugin registered, with
// a count of zero while no instance of it exists yet: migpro makes
// instances on demand, so a zero count still means the node offers it. A pod
// evicted towards a profile no node offers would stay Pending. When no node
// advertises any MIG resource at all, the capacities say nothing and the
// answer is true. When the
// nodes cannot be listed, it answers true with the error, so that a missing
// permission degrades to the agent's own view rather than to no readmission.
func (m *Marker) offered(ctx context.Context, resource string) (bool, error) {
	nodes, err := m.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return true, fmt.Errorf("list nodes: %w", err)
	}
	anyMIG := false
	for _, n := range nodes.Items {
		for name := range n.Status.Capacity {
			if !defaults.IsMIGResource(m.domain, string(name)) {
				continue
			}
			if string(name) == resource {
				return true, nil
			}
			anyMIG = true
		}
	}
	// No node advertises any MIG resource: the capacities say nothing (a
	// cluster whose device plugins have not registered yet), so do not block.
	return !anyMIG, nil
}
