// Package defaults holds the names shared across migpro: the resource
// domain and resource names, the kubelet's directories, the CDI kind, the
// agent's local API socket and the annotation prefix. It imports nothing of
// the project, so the smallest binaries (migctl, the OCI hook) can use it
// without linking the agent.
package defaults
