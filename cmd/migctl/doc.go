// Command migctl is migpro's node tool, small enough to copy onto hosts:
// alloc, free, status and top against the local agent's API, and the
// offline plan, predict and estimate. It is built on cobra the way kubectl
// and helm are: each command is a newXCmd function whose flags are bound to
// an options struct, and only the commands that talk to the agent have
// --socket and --timeout, and only those that print JSON have --output.
// The demo, the workload replay and `run` (containerd) live in migpro-lab;
// .golangci.yml keeps migctl from importing them again.
package main
