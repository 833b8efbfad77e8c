// Command migpro-agent is migpro's node daemon: it partitions the node's MIG
// GPUs on demand, publishes each instance through CDI and kubelet device
// plugins, and serves the local API that migctl uses.
package main
