// Package readmit moves a pod that will run out of GPU memory to a larger MIG
// profile: it records the recommendation, evicts the pod, and rewrites its
// replacement's request.
//
// Two halves share one record kept in the API server:
//
//   - The Marker runs in the node agent. When the predictor marks a container
//     (Mark), it annotates the pod (AnnotationPredictedOOM), records an Event
//     (reason PredictedOOM), stores a Recommendation for the pod's controller
//     in a ConfigMap owned by that controller (so it outlives the pod and is
//     garbage-collected with the controller), and evicts the pod through the
//     Eviction API, retrying while a PodDisruptionBudget refuses (429). A pod
//     without a controller is recorded and annotated but not evicted: nothing
//     would recreate it.
//   - The Webhook is a mutating admission handler (cmd/migpro-admission). On
//     pod CREATE it reads the Recommendation of the pod's controller and
//     rewrites the container's nvidia.com/mig-<old> limits and requests to
//     nvidia.com/mig-<new> with a JSON patch, annotating what it did
//     (AnnotationReadmitted). Anything unexpected lets the pod through
//     unchanged, with a warning.
//
// The EvictionGuard, served next to the Webhook, is a validating admission
// handler for pods/eviction: it lets the agent's identity evict only pods on
// the node its token is bound to, so that limit is the API server's, not the
// agent's code.
//
// The package does not import the agent: the agent converts its own mark into
// a readmit.Mark (see docs/readmit.md for the wiring).
package readmit
