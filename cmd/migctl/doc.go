// Command migctl is migpro's command-line tool: status pictures, what-if
// plans, local alloc/free for podman and containerd, predictor scoring and
// workload simulation. Each subcommand lives in its own file and registers
// itself in init.
package main
