// Package podresources reads which devices the kubelet has assigned to which
// pods, through the kubelet's PodResources API (v1 List on
// /var/lib/kubelet/pod-resources/kubelet.sock). The agent uses it to know
// which MIG instances are in use, and checks it before destroying one.
//
// [Client] is the real implementation and [Fake] the in-memory one; both
// satisfy [Lister].
package podresources
