// Package e2e holds end-to-end tests that drive migpro through real podman,
// containerd and kubelet processes on simulated GPUs.
package e2e
