// Package dra serves migpro's MIG instances through Kubernetes Dynamic
// Resource Allocation: the agent as a DRA driver on the kubelet plugin
// helper (k8s.io/dynamic-resource-allocation/kubeletplugin), next to the
// device plugins.
//
// It publishes one ResourceSlice pool per node:
//   - one counter set per GPU: a counter per memory slot (1 each) and the
//     GPU's compute slices, as NVML reports them, less what instances held
//     outside DRA (device plugins, local users) take;
//   - every profile at every legal placement as a device that consumes the
//     slots it covers and its slices, with the attributes profile, slices,
//     memoryMiB, model, parentUUID, gpu, start and size, and the capacity
//     memory;
//   - the devices in migpro's preference order, because the scheduler takes
//     the first device that fits: profiles smallest first, and within a
//     profile the partitioner's sequence of choices for its next requests
//     first (Partitioner.Sequence), then reuse, free space and space held
//     by idle instances, each by the layouts left reachable. It republishes after
//     every change, so the scheduler's first fit is migpro's best fit.
//
// Prepare makes the instance at exactly the placement the scheduler
// allocated, or reuses an idle one there, through the agent (which writes
// the CDI spec first, as for the device plugins) and returns its CDI name.
// The holder "dra:<claim UID>:<device>" is checkpointed by the agent before
// Prepare answers, so a repeated Prepare and an Unprepare (which gets only
// the claim's UID) find the instance again after a crash. Unprepare returns
// the instance to the idle pool, where the warm-pool and idle-timeout rules
// apply. An instance held for a claim is never destroyed: it is in use
// until the kubelet unprepares the claim, which it does only after the
// claim's last container has stopped.
//
// An instance marked unhealthy by an Xid (or its whole GPU) makes its
// device carry a NoSchedule taint.
//
// On a cluster without resource.k8s.io/v1 the driver says so in one line
// and stays idle; the device plugins keep serving.
package dra
