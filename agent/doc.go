// Package agent wires migpro's node daemon together: the partitioner over the
// GPU node it is given (GPU; package agent/gpunode opens a real or simulated
// one), a CDI spec per instance, one kubelet device
// plugin per profile, a local API on a unix socket for migctl, podman and
// containerd users, a checkpoint so a restart disturbs nothing, use tracking
// through the kubelet's PodResources API, Xid health, and an HTTP endpoint
// for Prometheus metrics and the liveness and readiness probes
// (metrics.go, service.go). It runs on hosts without a kubelet with the
// same defaults (kubelet.go), and can clean up after itself for an
// uninstall (cleanup.go).
//
// Telemetry (telemetry.go, history.go) feeds each container's memory to a
// predictor; subscribers hear of its marks (OnMark) and of every
// container's end with its peak (OnContainerEnd), which the cluster link
// (agent/kube) turns into readmission and moving down.
//
// New only wires the parts; Run (through Open) makes the state directory and
// the CDI writer, builds the partitioner, recovers (recover.go) and starts
// telemetry before it serves. The local API's answers are client's wire
// types, converted from the partitioner's and predictor's (wire.go).
//
// Ordering rules it keeps (docs/design.md, "The flow"):
//   - a spec is written before its instance is advertised, and removed only
//     after the instance is destroyed;
//   - an instance is withdrawn from ListAndWatch before it is destroyed;
//   - every change of ownership is checkpointed before it is acknowledged.
package agent
