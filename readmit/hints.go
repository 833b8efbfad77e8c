package readmit

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/migpro/migpro/predictor"
)

const (
	// AnnotationRestartSeconds on a pod says how long, in whole seconds, its
	// workload needs to start again on a larger instance (load its model,
	// restore a checkpoint). The time an eviction needs is the pod's
	// terminationGracePeriodSeconds plus this; without it, the agent's
	// --readmit-restart-seconds.
	AnnotationRestartSeconds = "migpro.dev/restart-seconds"
	// AnnotationExpectedDuration on a pod declares how long its workload
	// runs from the container's start, as a Go duration ("90m", "2h30m"):
	// a horizon. Without it none is assumed: activeDeadlineSeconds is a
	// limit, not an expected end (Jobs set it generously as a safety cap),
	// and projecting a warm-up to a far limit would mark it.
	AnnotationExpectedDuration = "migpro.dev/expected-duration"
)

// DefaultRestart is the restart time when neither the pod nor the agent
// says otherwise.
const DefaultRestart = 30 * time.Second

// PodHints reads what a pod says about its run for the predictor: the time
// an eviction needs (grace period plus restart, the pod's
// AnnotationRestartSeconds or else restart) and its horizon
// (AnnotationExpectedDuration only). A bad
// annotation is an error naming it; the caller then keeps the defaults.
func PodHints(pod *corev1.Pod, restart time.Duration) (predictor.Hints, error) {
	var h predictor.Hints
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g >= 0 {
		grace = *g
	}
	if v, ok := pod.Annotations[AnnotationRestartSeconds]; ok {
		n, err := strconv.ParseUint(v, 10, 31)
		if err != nil {
			return h, fmt.Errorf("pod %s/%s: annotation %s=%q: want whole seconds", pod.Namespace, pod.Name, AnnotationRestartSeconds, v)
		}
		restart = time.Duration(n) * time.Second
	}
	h.EvictionTime = float64(grace) + restart.Seconds()
	if v, ok := pod.Annotations[AnnotationExpectedDuration]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return h, fmt.Errorf("pod %s/%s: annotation %s=%q: want a positive duration such as 90m", pod.Namespace, pod.Name, AnnotationExpectedDuration, v)
		}
		h.Horizon = d.Seconds()
	}
	return h, nil
}
