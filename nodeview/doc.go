// Package nodeview serves each node agent a read-only view of the objects
// its node needs, and nothing else: the node authorizer's job for kubelets,
// done by migpro-admission for migpro's agents.
//
// RBAC cannot hold a read to a field selector, so an agent that lists
// pending pods with its own ServiceAccount may as well list every pod in the
// cluster, environment included. With the view, the agent's ServiceAccount
// has no read verb on pods, ReplicaSets, Jobs or Namespaces; it reads them
// here instead, with a token of its own ServiceAccount bound to its pod
// (audience Audience). The server checks the token with a TokenReview, takes
// the caller's node from the user info the API server adds to a bound token
// (authentication.kubernetes.io/node-name), and forwards only these reads
// to the API server, with its own identity:
//
//   - pods, list and watch: only with the field selector
//     spec.nodeName=<the caller's node> or the pending selector of the
//     demand source (demand.PendingSelector); pending pods are further
//     limited to those that ask for a MIG resource;
//   - a pod, get: one on the caller's node, or a pending pod asking for MIG;
//   - a ReplicaSet or a Job, get: only one that owns a pod on the caller's
//     node;
//   - a Namespace, get: only one holding a pod on the caller's node, and
//     only its name and labels.
//
// Every pod and pod template it returns has what could carry a secret and
// the agent never reads stripped (strip.go). The paths are the API server's,
// so the agent's client-go clients and informers work against the view
// unchanged: client.go builds their configuration, and ReadsThrough
// (reads.go) sends an agent's reads to the view and its writes to the API
// server. Everything else is refused with one line that says why.
package nodeview
