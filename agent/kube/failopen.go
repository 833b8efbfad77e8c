package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/telemetry"
)

// ReasonTelemetryFailOpen is the reason of the Event recorded on a pod whose
// container the hook let start without telemetry.
const ReasonTelemetryFailOpen = "TelemetryFailOpen"

// failOpen is one fail-open the hook reported, waiting for its Event.
type failOpen struct {
	c      telemetry.Registration
	reason string
}

// queueFailOpen hands a fail-open to Run without blocking the local API.
func (l *link) queueFailOpen(c telemetry.Registration, reason string) {
	if c.PodName == "" || c.PodNamespace == "" {
		return // not a pod's container (podman, ctr): the log line is the record
	}
	select {
	case l.failOpens <- failOpen{c: c, reason: reason}:
	default:
		l.log.WithField("pod", c.PodNamespace+"/"+c.PodName).Warn("event queue full: fail-open Event dropped")
	}
}

// recordFailOpen records a Warning Event on the container's pod, once the
// pod is known to be the one the hook named (same uid) and to run on this
// node: the hook's registration comes from the runtime's annotations, and
// the agent writes Events only about its own node's pods.
func (l *link) recordFailOpen(ctx context.Context, f failOpen) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	log := l.log.WithFields(logrus.Fields{"pod": f.c.PodNamespace + "/" + f.c.PodName, "container": f.c.ContainerName})
	pod, err := l.cs.CoreV1().Pods(f.c.PodNamespace).Get(ctx, f.c.PodName, metav1.GetOptions{})
	switch {
	case err != nil:
		log.WithError(err).Warn("fail-open Event not recorded: pod unreadable")
		return
	case f.c.PodUID != "" && string(pod.UID) != f.c.PodUID:
		log.WithField("pod_uid", f.c.PodUID).Warn("fail-open Event not recorded: the pod of that name is another one")
		return
	case pod.Spec.NodeName != l.node:
		log.WithField("pod_node", pod.Spec.NodeName).Warn("fail-open Event not recorded: the pod is not on this node")
		return
	}
	now := metav1.NewTime(time.Now())
	name := pod.Name
	if len(name) > 200 {
		name = name[:200]
	}
	ref := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion}
	if f.c.ContainerName != "" {
		ref.FieldPath = fmt.Sprintf("spec.containers{%s}", f.c.ContainerName)
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", name, now.UnixNano()), Namespace: pod.Namespace},
		InvolvedObject: ref, Type: corev1.EventTypeWarning, Reason: ReasonTelemetryFailOpen,
		Message: fmt.Sprintf("container %q started without migpro telemetry (fail-open), so no out-of-memory prediction covers it: %s",
			f.c.ContainerName, f.reason),
		Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source:              corev1.EventSource{Component: "migpro-agent", Host: l.node},
		ReportingController: "migpro.dev/agent", ReportingInstance: "migpro-agent-" + l.node,
	}
	if _, err := l.cs.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		log.WithError(err).Warn("fail-open Event not recorded")
		return
	}
	log.Debug("fail-open Event recorded")
}
