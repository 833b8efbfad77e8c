package readmit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// event records a core/v1 Event on the pod. Its name is derived from the pod
// UID, the reason and the message, so a second Handle of the same mark
// finds it and only bumps its count: marking twice does not double the
// events.
func (m *Marker) event(ctx context.Context, pod *corev1.Pod, typ, reason, msg string) {
	sum := sha256.Sum256([]byte(string(pod.UID) + "\x00" + reason + "\x00" + msg))
	name := pod.Name
	if len(name) > 200 {
		name = name[:200]
	}
	name = fmt.Sprintf("%s.%s", name, hex.EncodeToString(sum[:8]))
	now := metav1.NewTime(m.now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace,
			Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Reason: reason, Message: msg, Type: typ, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source:              corev1.EventSource{Component: Component, Host: m.node},
		ReportingController: "migpro.dev/readmit", ReportingInstance: m.reportingInstance(),
	}
	evs := m.client.CoreV1().Events(pod.Namespace)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := evs.Create(ctx, ev, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var old *corev1.Event
		if old, err = evs.Get(ctx, name, metav1.GetOptions{}); err == nil {
			old.Count++
			old.LastTimestamp = now
			_, err = evs.Update(ctx, old, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		m.log.WithError(err).WithFields(podFields(pod)).WithField("reason", reason).Warn("readmit: event not recorded")
	}
}

func (m *Marker) reportingInstance() string {
	if m.node == "" {
		return Component
	}
	return Component + "-" + m.node
}
