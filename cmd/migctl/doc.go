// Command migctl is migpro's command-line tool: status pictures, what-if
// plans, local alloc/free for podman and containerd, predictor scoring and
// workload replay. It is built on cobra (root.go): the global flags
// --socket, --timeout and --output are defined once, every command has its
// help and examples (docs.go), and `migctl completion` writes shell
// completion. Each subcommand lives in its own file and registers itself in
// init; its flags are defined where it parses them, and cobra learns them
// from a describe pass.
package main
