// Command pause is the pod sandbox image's only binary: it waits for
// SIGTERM or SIGINT and exits 0. The harness builds it statically and packs
// it into an OCI image (see harness.PauseImage).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
