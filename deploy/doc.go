// Package deploy holds migpro's installation files: Kubernetes manifests
// (kubernetes/, rendered from the chart in helm/), least-privilege RBAC
// fragments to apply instead of the chart's ClusterRole (least-privilege/),
// a systemd unit for hosts without Kubernetes (systemd/) and a podman
// hooks.d file (hooks.d/). Its test checks that the manifests are valid
// objects and pass only flags the agent has.
package deploy
