package readmit

import (
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/migpro/migpro/defaults"
)

// Rewrite is one request the webhook changed; the AnnotationReadmitted
// annotation holds the list.
type Rewrite struct {
	Container  string `json:"container"`
	From       string `json:"from"`
	To         string `json:"to"`
	Controller string `json:"controller"`
}

// patchOp is one RFC 6902 JSON patch operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// rewritePatch returns the JSON patch that moves each container's MIG
// requests and limits to the recommended resources, with the annotation
// saying so; no ops when nothing applies. Skipped rewrites come back as
// warnings.
func rewritePatch(pod *corev1.Pod, rec *Recommendation, domain string) (ops []patchOp, rewrites []Rewrite, warnings []string) {
	for i, c := range pod.Spec.Containers {
		for _, from := range migResources(c, domain) {
			to, ok := rec.Target(c.Name, from)
			if !ok {
				continue
			}
			if !KnownProfileResource(domain, to) {
				warnings = append(warnings, fmt.Sprintf("migpro-readmit: recommendation %s → %q for container %s is not a known %s MIG profile; left unchanged", from, to, c.Name, domain))
				continue
			}
			var cops []patchOp
			clash := false
			for _, f := range []struct {
				name string
				list corev1.ResourceList
			}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
				q, has := f.list[corev1.ResourceName(from)]
				if !has {
					continue
				}
				if _, dup := f.list[corev1.ResourceName(to)]; dup {
					clash = true
					break
				}
				base := fmt.Sprintf("/spec/containers/%d/resources/%s/", i, f.name)
				cops = append(cops, patchOp{Op: "remove", Path: base + jsonPointerEscape(from)},
					patchOp{Op: "add", Path: base + jsonPointerEscape(to), Value: q.String()})
			}
			if clash {
				warnings = append(warnings, fmt.Sprintf("migpro-readmit: container %s already asks for %s; %s left unchanged", c.Name, to, from))
				continue
			}
			ops = append(ops, cops...)
			rewrites = append(rewrites, Rewrite{Container: c.Name, From: from, To: to, Controller: rec.Controller.String()})
		}
	}
	if len(rewrites) == 0 {
		return nil, nil, warnings
	}
	v, _ := json.Marshal(rewrites) // plain strings: cannot fail
	if pod.Annotations == nil {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{AnnotationReadmitted: string(v)}})
	} else {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + jsonPointerEscape(AnnotationReadmitted), Value: string(v)})
	}
	return ops, rewrites, warnings
}

// migResources lists the MIG resources a container asks for, in limits or
// requests, sorted.
func migResources(c corev1.Container, domain string) []string {
	seen := map[string]bool{}
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for n := range list {
			if defaults.IsMIGResource(domain, string(n)) {
				seen[string(n)] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
