// Package kube links the agent to a Kubernetes API server. It is the only
// part of the agent that uses Kubernetes' client libraries:
//
//   - cluster demand (package demand): pods pending on this node for a MIG
//     resource get instances made for them, which the device plugins then
//     advertise;
//   - readmission (package readmit): a pod whose container the predictor
//     marks gets its recommendation stored and is evicted, so its controller
//     recreates it on the larger profile;
//   - moving down (runs.go): every container's end, with its peak, is
//     counted against its owner's recommendation by a RunRecorder (the
//     link's readmit.Marker), so a workload whose runs fit a smaller profile
//     again asks for it;
//   - fail-open Events (failopen.go): a pod whose container the hook let
//     start without telemetry gets a Warning Event (TelemetryFailOpen)
//     saying so, once the agent has checked the pod is on its node.
//
// At start it also refuses to run beside another device plugin that
// advertises MIG resources on the node, and labels the node with its GPUs'
// static facts (labels.go); both need get and patch on nodes.
//
// All of it runs under the agent's Run context: when the agent stops, eviction
// retries stop with it.
//
// The link is on when a kubeconfig is given or the agent runs in a pod, a
// node name is set, and the device plugins are on (an instance made for a
// pod that no plugin advertises would never reach it).
package kube
