// Package plugin serves the kubelet device plugins of migpro: one
// v1beta1.DevicePlugin gRPC server per MIG profile the node offers, each on
// its own unix socket in the kubelet's device-plugin directory and
// registered with kubelet.sock.
//
// The agent supplies an [Inventory]: the profiles to advertise and, per
// profile, the MIG instances that exist and have a CDI spec. Whenever the
// inventory signals a change, every ListAndWatch stream re-reads its list and
// sends it if it differs from the last one sent, so created, destroyed and
// unhealthy instances reach the kubelet in the running process.
//
// Allocate answers with the instance's qualified CDI name (CdiDevices) and,
// for runtimes without CDI, NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES
// set to the MIG UUIDs. An unknown ID (including one the agent has already
// withdrawn for destruction) is NotFound, an unhealthy one FailedPrecondition,
// and the agent can refuse more through [WithAllocateCheck].
// GetPreferredAllocation delegates to [WithPreference].
//
// The [Manager] runs the servers, adds and removes them as the set of
// profiles changes, re-creates a server whose socket was deleted and
// re-registers every server when kubelet.sock is re-created (a kubelet
// restart), retrying with backoff while the kubelet is not listening.
//
// Resource names are "<domain>/mig-<profile>" with '+' turned into '.', e.g.
// "nvidia.com/mig-1g.10gb.me", so existing pod specs work unchanged; sockets
// are "migpro-<profile>.sock" with the same substitution.
//
// The sub-package podresources reads which devices the kubelet has assigned
// to which pods.
package plugin
