// Package cdi writes and removes one Container Device Interface spec per MIG
// instance, so podman, containerd and the kubelet can hand the instance to a
// container.
package cdi
