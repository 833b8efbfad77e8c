// Package readmit moves a pod that will run out of GPU memory to a larger MIG
// profile: it records the recommendation, evicts the pod, and rewrites its
// replacement's request.
//
// Two halves share one record kept in the API server:
//
//   - The Marker runs in the node agent. When the predictor marks a container
//     (predictor.Mark), it annotates the pod (AnnotationPredictedOOM), records an Event
//     (reason PredictedOOM), stores a Recommendation for the pod's top-level
//     owner (Store.Owner: a ReplicaSet's Deployment, else the controller) in
//     a ConfigMap owned by that owner (so it outlives the pod and is
//     garbage-collected with the owner), and evicts the pod through the
//     Eviction API, retrying while a PodDisruptionBudget refuses (429). A pod
//     without a controller is recorded and annotated but not evicted: nothing
//     would recreate it. Nor is a pod whose move would repeat one that did
//     not happen (loops), a pod labelled LabelReadmit=ReadmitDisabled, or a
//     Job's pod unless the first podFailurePolicy rule the evicted pod can
//     match ignores it (IgnoresDisruption): readmission never uses up a
//     Job's backoffLimit. Each refusal is an Event on the pod.
//   - Moving down: the agent hands each container's end to
//     Marker.RecordEnd, which counts the run against the owner's rules
//     (Store.RecordRun). After DecayRuns runs in a row whose peak fits a
//     rule's From again, the rule is dropped (Event ReadmitDecayed).
//   - The Webhook is a mutating admission handler (cmd/migpro-admission). On
//     pod CREATE it reads the Recommendation of the pod's owner and
//     rewrites the container's nvidia.com/mig-<old> limits and requests to
//     nvidia.com/mig-<new> with a JSON patch, annotating what it did
//     (AnnotationReadmitted). Anything unexpected lets the pod through
//     unchanged, with a warning.
//   - The ClaimWebhook is the same for a pod whose GPU comes from a
//     ResourceClaimTemplate (the DRA driver): on ResourceClaim CREATE it
//     reads the claim's pod and its owner's Recommendation and moves the
//     requests the marked container uses to the recommended profile (the
//     profile selector on the DeviceClass of every migpro device),
//     annotating the claim (AnnotationReadmitted). The Marker takes such a
//     container's profile from its instance, since it asks for no MIG
//     resource. See docs/dra.md, Readmission.
//
// The EvictionGuard, served next to the Webhook, is a validating admission
// handler for pods/eviction: it lets the agent's identity evict only pods on
// the node its token is bound to, so that limit is the API server's, not the
// agent's code.
//
// The package does not import the agent: both take the predictor's mark
// (predictor.Mark), which the agent fills with the pod identity and instance
// (see docs/readmit.md for the wiring).
package readmit
