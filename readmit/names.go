package readmit

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/migpro/migpro/defaults"
)

const (
	// AnnotationPredictedOOM is set on a marked pod: JSON of PredictedOOM.
	AnnotationPredictedOOM = "migpro.dev/predicted-oom"
	// AnnotationReadmitted is set by the webhook on a pod whose request it
	// rewrote: JSON of a list of Rewrite.
	AnnotationReadmitted = "migpro.dev/readmitted"

	// LabelRecommendation marks the ConfigMaps that hold recommendations.
	LabelRecommendation = "migpro.dev/recommendation"
	// LabelManagedBy and ManagedBy mark what migpro wrote. The webhook trusts
	// a recommendation ConfigMap only when it carries both this label and
	// LabelRecommendation; RBAC and the admission policy let the agent write
	// only such ConfigMaps.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "migpro"
	// RecommendationKey is the ConfigMap data key holding the JSON record.
	RecommendationKey = "recommendation.json"

	// LabelReadmit set to ReadmitDisabled on a pod opts it out of
	// readmission: the webhook skips it (its objectSelector), and the Marker
	// annotates it and records the recommendation but never evicts it.
	LabelReadmit    = "migpro.dev/readmit"
	ReadmitDisabled = "disabled"

	// Event reasons, on the pod.
	ReasonPredictedOOM    = "PredictedOOM"
	ReasonEvictionBlocked = "ReadmitEvictionBlocked"
	ReasonEvicted         = "ReadmitEvicted"
	ReasonNotEvicted      = "ReadmitNotEvicted"
	ReasonDecayed         = "ReadmitDecayed"

	// Component is the event source.
	Component = "migpro-readmit"
)

// StoreName is the name of the ConfigMap holding the recommendation for a
// controller: readable when it fits, hashed when it would not be a valid
// object name.
func StoreName(kind, name string) string {
	n := "migpro-readmit-" + strings.ToLower(kind) + "-" + name
	if len(n) <= 253 && !strings.Contains(n, "..") {
		return n
	}
	sum := sha256.Sum256([]byte(kind + "/" + name))
	return "migpro-readmit-" + strings.ToLower(kind) + "-" + hex.EncodeToString(sum[:10])
}

// jsonPointerEscape escapes one JSON-pointer token (RFC 6901).
func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// profileLabel is the grammar of a MIG profile as it appears in a resource
// name (defaults.ProfileLabel): <slices>g.<memory>gb, an optional
// compute-instance prefix <n>c., and the driver's variant suffixes (+me,
// +me.all, +gfx, -me, with "+" written "."). Slices are 1 to 8 and memory 1 to
// 4 digits, which covers every profile NVML names today.
var profileLabel = regexp.MustCompile(`^(?:[1-8]c\.)?[1-8]g\.[1-9][0-9]{0,3}gb(?:\.me|\.me\.all|\.gfx|-me)?$`)

// KnownProfileResource reports whether name is domain's resource for a MIG
// profile: "<domain>/mig-<profile label>". Anything else (a path, a
// separator, a profile that cannot exist) is refused as a readmission target.
func KnownProfileResource(domain, name string) bool {
	p := domain + "/" + defaults.ResourcePrefix
	return strings.HasPrefix(name, p) && profileLabel.MatchString(name[len(p):])
}
