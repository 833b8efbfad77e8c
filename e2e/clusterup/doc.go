// Command clusterup starts the end-to-end suite's real single-node cluster
// (etcd, kube-apiserver, controller-manager, scheduler, containerd and a
// kubelet joined as a node, from e2e/harness) for a person to try migpro
// on, prints the admin kubeconfig's path, and keeps it running until it is
// signalled; then it stops everything and undoes the kubelet's side
// effects. `make cluster-up` and `make cluster-down` run it (mk/cluster.mk).
package main
