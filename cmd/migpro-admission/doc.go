// Command migpro-admission serves the readmission webhook: a mutating
// admission webhook that, on pod CREATE, rewrites the MIG request of a pod
// whose controller has a recommendation (a pod evicted because it was
// predicted to run out of GPU memory comes back asking for the larger
// profile). See package readmit and docs/readmit.md.
//
// It also serves the eviction guard, a validating admission webhook on
// pods/eviction that lets the node agent (--agent-user) evict only pods on
// the node its token is bound to (docs/security.md, finding 1), the
// recommendation guard, and, for the DRA driver (docs/dra.md, Readmission),
// the claim webhook: on ResourceClaim CREATE it moves the request of a
// claim made from a pod's template to the recommended profile
// (--device-class names the DeviceClass of every migpro device).
//
//	migpro-admission --listen :8443 --tls-cert tls.crt --tls-key tls.key [--kubeconfig FILE]
//
// It serves POST /mutate, /mutate-claim, /validate-eviction and
// /validate-recommendation (admission.k8s.io/v1
// AdmissionReview) and GET /healthz over HTTPS. Without --kubeconfig it
// uses the in-cluster config. The certificate and key are re-read when their files change, so a rotated
// Secret is picked up without a restart.
//
// Unless --node-view=false it also serves the node view (package nodeview;
// --view-review-ttl: how long an agent token's review is trusted)
// on GET /api/ and /apis/: each node agent, with a token of its
// ServiceAccount bound to its node, reads there the pods of its node,
// pending MIG pods and their owners, stripped of their environments, in
// place of reading them from the API server (docs/security.md).
package main
