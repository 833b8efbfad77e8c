package readmit

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

const (
	// AnnotationPredictedOOM is set on a marked pod: JSON of PredictedOOM.
	AnnotationPredictedOOM = "migpro.dev/predicted-oom"
	// AnnotationReadmitted is set by the webhook on a pod whose request it
	// rewrote: JSON of a list of Rewrite.
	AnnotationReadmitted = "migpro.dev/readmitted"

	// LabelRecommendation marks the ConfigMaps that hold recommendations.
	LabelRecommendation = "migpro.dev/recommendation"
	// RecommendationKey is the ConfigMap data key holding the JSON record.
	RecommendationKey = "recommendation.json"

	// Event reasons, on the pod.
	ReasonPredictedOOM    = "PredictedOOM"
	ReasonEvictionBlocked = "ReadmitEvictionBlocked"
	ReasonEvicted         = "ReadmitEvicted"
	ReasonNotEvicted      = "ReadmitNotEvicted"

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
