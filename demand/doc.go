// Package demand turns pending pods into requests for MIG instances.
//
// In a cluster every migpro agent runs a Source. It watches pods that no
// node has been chosen for (spec.nodeName empty, phase Pending) and that the
// scheduler marked unschedulable (PodScheduled=False, reason Unschedulable),
// and keeps those that request MIG resources (<domain>/mig-<profile>, with
// "+" written as "."). For each, one agent claims the pod with an
// optimistic-concurrency patch of two annotations (claimed-by and
// claimed-at, sent with the pod's resourceVersion, so a concurrent claimer
// gets a Conflict), then makes idle instances of the requested profiles on
// its node through a Provisioner. The device plugins advertise them, the
// node's allocatable grows and the scheduler places the pod.
//
// A node claims a pod only if it could serve it: the pod's node selector,
// required node affinity and taints admit the node, every requested profile
// is offered here, and the Provisioner says (without side effects) that the
// node can have every instance asked for, idle or new.
// Idle instances that cover the node's own claims are reserved: they are
// neither counted twice nor destroyed to make room for another pod.
//
// Claims that go stale can be taken over: the claiming node is gone or not
// Ready, it did not provision within ClaimTimeout, or the pod was still not
// scheduled ScheduleTimeout after it provisioned. A node that cannot finish
// what it claimed gives the claim up (removes the annotations) and leaves the
// pod alone for a while so another node can try. Pods that are scheduled or
// deleted drop out of the watch and are forgotten. See docs/demand.md.
package demand
