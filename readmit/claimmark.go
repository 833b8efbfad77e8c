package readmit

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// fixedClaim returns why the marked container cannot be moved by evicting
// its pod: it uses a ResourceClaim the pod names directly
// (resourceClaimName), which its replacement would reuse as it is, on the
// same device. "" when every claim it uses is made from a template for each
// pod (or it uses none).
func fixedClaim(pod *corev1.Pod, container string) string {
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == container {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil {
		return ""
	}
	for _, used := range c.Resources.Claims {
		for _, pc := range pod.Spec.ResourceClaims {
			if pc.Name == used.Name && pc.ResourceClaimName != nil {
				return fmt.Sprintf("container %s uses the ResourceClaim %s, which its replacement would reuse on the same device; "+
					"use a ResourceClaimTemplate for readmission to move it", container, *pc.ResourceClaimName)
			}
		}
	}
	return ""
}
