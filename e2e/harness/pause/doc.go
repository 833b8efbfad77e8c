// Command pause is the pod sandbox image's only binary: it waits for
// SIGTERM or SIGINT and exits 0. The harness builds it statically and packs
// it into an OCI image (see harness.PauseImage).
package main
