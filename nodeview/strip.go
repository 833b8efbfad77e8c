package nodeview

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lastApplied is kubectl's copy of the whole object as applied: the pod's
// environment included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// stripMeta drops what the agent never reads and could hold a secret or a
// copy of the spec: managed fields (field names of the environment) and
// kubectl's last-applied copy.
func stripMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	delete(m.Annotations, lastApplied)
}

// stripPod removes from a pod what could carry a secret and the agent does
// not read (its placement, demand and readmission read names, resources,
// claims, owners, labels, annotations, node and status): in every
// container, init and ephemeral container the environment (env, envFrom),
// the command and arguments, probes and lifecycle handlers (exec commands,
// HTTP headers); and the volumes' sources (inline credentials of some
// volume types), keeping their names.
func stripPod(p *corev1.Pod) {
	stripMeta(&p.ObjectMeta)
	stripSpec(&p.Spec)
}

// stripTemplate does to a controller's pod template what stripPod does to
// a pod.
func stripTemplate(t *corev1.PodTemplateSpec) {
	stripMeta(&t.ObjectMeta)
	stripSpec(&t.Spec)
}

func stripSpec(s *corev1.PodSpec) {
	for i := range s.Containers {
		stripContainer(&s.Containers[i])
	}
	for i := range s.InitContainers {
		stripContainer(&s.InitContainers[i])
	}
	for i := range s.EphemeralContainers {
		c := &s.EphemeralContainers[i].EphemeralContainerCommon
		c.Env, c.EnvFrom, c.Command, c.Args = nil, nil, nil, nil
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	}
	for i := range s.Volumes {
		s.Volumes[i].VolumeSource = corev1.VolumeSource{}
	}
}

func stripContainer(c *corev1.Container) {
	c.Env, c.EnvFrom, c.Command, c.Args = nil, nil, nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
}
