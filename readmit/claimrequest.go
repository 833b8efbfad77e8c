package readmit

import (
	"fmt"
	"regexp"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/migpro/migpro/defaults"
)

// DRADriver is the name of migpro's DRA driver (dra.DriverName): the domain
// of its devices' attributes, which a claim selects a profile on.
const DRADriver = "migpro.dev"

// DefaultDeviceClass is the DeviceClass of every migpro device, as the
// chart installs it; a per-profile class is <profile>.<it>, "+" written "-".
const DefaultDeviceClass = "mig.migpro.dev"

// profileSelector matches the one CEL selector the webhook reads and writes:
// the device's profile attribute equal to a quoted profile name.
var profileSelector = regexp.MustCompile(`^\s*device\.attributes\["` + regexp.QuoteMeta(DRADriver) + `"\]\.profile\s*==\s*"([^"\\]+)"\s*$`)

// profileExpression is the CEL selector for one profile (its NVML name).
func profileExpression(profile string) string {
	return fmt.Sprintf(`device.attributes[%q].profile == %q`, DRADriver, profile)
}

// profileOfClass is the profile a per-profile DeviceClass name stands for
// ("1g.5gb.mig.migpro.dev" → "1g.5gb"), "" for any other class.
func profileOfClass(class, base string) string {
	p, ok := strings.CutSuffix(class, "."+base)
	if !ok || p == "" {
		return ""
	}
	// The chart writes "+" as "-" in the class name: 1g.10gb-me.
	if i := strings.Index(p, "gb-"); i >= 0 {
		p = p[:i+2] + "+" + p[i+3:]
	}
	return p
}

// profileOfResource is the NVML profile name of a MIG resource name
// ("nvidia.com/mig-1g.10gb.me" → "1g.10gb+me"); the resource name writes
// the variant's "+" as ".".
func profileOfResource(domain, res string) string {
	label, ok := strings.CutPrefix(res, domain+"/"+defaults.ResourcePrefix)
	if !ok {
		return ""
	}
	if i := strings.Index(label, "gb."); i >= 0 {
		label = label[:i+2] + "+" + label[i+3:]
	}
	return label
}

// requestProfile is the profile one exact request names: by its
// per-profile DeviceClass, or by the profile selector on the base class. ""
// when it names none (it selects by memory, model, or anything else).
func requestProfile(r *resourceapi.ExactDeviceRequest, base string) string {
	if p := profileOfClass(r.DeviceClassName, base); p != "" {
		return p
	}
	if r.DeviceClassName != base {
		return ""
	}
	for _, s := range r.Selectors {
		if s.CEL == nil {
			continue
		}
		if m := profileSelector.FindStringSubmatch(s.CEL.Expression); m != nil {
			return m[1]
		}
	}
	return ""
}

// retarget returns a copy of r that selects profile to: the base class,
// the request's other selectors kept, its profile selectors replaced by
// one for to. A per-profile class selects nothing but its profile (the
// chart's classes), so dropping it loses nothing.
func retarget(r *resourceapi.ExactDeviceRequest, to, base string) *resourceapi.ExactDeviceRequest {
	out := r.DeepCopy()
	out.DeviceClassName = base
	out.Selectors = nil
	for _, s := range r.Selectors {
		if s.CEL != nil && profileSelector.MatchString(s.CEL.Expression) {
			continue
		}
		out.Selectors = append(out.Selectors, s)
	}
	out.Selectors = append(out.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: profileExpression(to)}})
	return out
}

// claimTarget is the profile a request should ask for instead, for the
// containers that use it, following the recommendation; "" when no rule
// applies. A request that names no profile (a claim by memory) gets the
// target of the container's one chain of rules: its pods were allocated
// the rule's From through the same request.
func claimTarget(rec *Recommendation, containers []string, profile, domain string) (from, to string) {
	for _, c := range containers {
		var starts []string
		if profile != "" {
			starts = []string{defaults.ResourceName(domain, profile)}
		} else {
			starts = chainStarts(rec, c)
			if len(starts) != 1 {
				continue // none, or several: which the request gets is unknown
			}
		}
		if t, ok := rec.Target(c, starts[0]); ok {
			return starts[0], t
		}
	}
	return "", ""
}

// chainStarts lists the From of container c's applied rules that no other
// rule of c leads to.
func chainStarts(rec *Recommendation, c string) []string {
	tos := map[string]bool{}
	for _, r := range rec.Rules {
		if !r.Advised && (r.Container == "" || r.Container == c) {
			tos[r.To] = true
		}
	}
	var out []string
	for _, r := range rec.Rules {
		if !r.Advised && (r.Container == "" || r.Container == c) && !tos[r.From] && !contains(out, r.From) {
			out = append(out, r.From)
		}
	}
	return out
}

// ClaimRewrite is one request of a claim the webhook moved; the claim's
// AnnotationReadmitted annotation holds the list.
type ClaimRewrite struct {
	Request    string   `json:"request"`
	Containers []string `json:"containers"`
	From       string   `json:"from"`
	To         string   `json:"to"`
	Controller string   `json:"controller"`
}

// rewriteClaim returns the claim's requests moved to the recommended
// profiles (nil when nothing applies), what it did, and warnings for the
// requests it could not move. users maps a request name to the containers
// that use it.
func rewriteClaim(spec *resourceapi.DeviceClaim, users map[string][]string, rec *Recommendation, domain, base string) (
	requests []resourceapi.DeviceRequest, rewrites []ClaimRewrite, warnings []string) {
	out := make([]resourceapi.DeviceRequest, len(spec.Requests))
	for i := range spec.Requests {
		r := spec.Requests[i].DeepCopy()
		out[i] = *r
		cs := users[r.Name]
		if len(cs) == 0 {
			continue
		}
		move := func(e *resourceapi.ExactDeviceRequest, name string) *resourceapi.ExactDeviceRequest {
			profile := requestProfile(e, base)
			if profile == "" && e.DeviceClassName != base {
				return nil // another driver's device
			}
			from, to := claimTarget(rec, cs, profile, domain)
			if to == "" {
				return nil
			}
			if !KnownProfileResource(domain, to) {
				warnings = append(warnings, fmt.Sprintf("migpro-readmit: recommendation %s → %q for request %s is not a known %s MIG profile; left unchanged", from, to, name, domain))
				return nil
			}
			rewrites = append(rewrites, ClaimRewrite{Request: name, Containers: cs, From: from, To: to, Controller: rec.Controller.String()})
			return retarget(e, profileOfResource(domain, to), base)
		}
		switch {
		case r.Exactly != nil:
			if e := move(r.Exactly, r.Name); e != nil {
				out[i].Exactly = e
			}
		default:
			for j := range r.FirstAvailable {
				sub := &r.FirstAvailable[j]
				e := &resourceapi.ExactDeviceRequest{DeviceClassName: sub.DeviceClassName, Selectors: sub.Selectors}
				if n := move(e, r.Name+"/"+sub.Name); n != nil {
					out[i].FirstAvailable[j].DeviceClassName, out[i].FirstAvailable[j].Selectors = n.DeviceClassName, n.Selectors
				}
			}
		}
	}
	if len(rewrites) == 0 {
		return nil, nil, warnings
	}
	return out, rewrites, warnings
}
