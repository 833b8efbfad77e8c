// Package client is the agent's local API as its callers see it: the
// request and response types, the paths, and a Client over the agent's unix
// socket. migctl, the OCI hook's callers and tests use it; it links none of
// the agent, so neither Kubernetes' client libraries nor the device plugins
// come with it.
//
// The API is JSON over HTTP on a unix socket (defaults.AgentSocket). Every
// error answer is {"error": "<one line>"}; 400 means the request itself is
// wrong, 404 an unknown instance, 409 "not now" (must wait, or in use).
package client
