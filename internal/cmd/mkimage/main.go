package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/migpro/migpro/internal/imagebuild"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding the binaries make build writes")
	busybox := flag.String("busybox", "/bin/busybox", "static busybox binary (Debian's busybox-static)")
	out := flag.String("out", "bin/images", "directory the archives are written to")
	repo := flag.String("repo", imagebuild.Repository, "image repository")
	tag := flag.String("tag", "", "image tag (make image passes git describe)")
	flag.Parse()
	built, err := imagebuild.Build(imagebuild.Sources{BinDir: *bin, Busybox: *busybox}, *out, *repo, *tag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
	for _, b := range built {
		fmt.Printf("%s  %s  archive %.1f MiB, content %.1f MiB  %s\n", b.Name, b.Manifest,
			float64(b.ArchiveBytes)/(1<<20), float64(b.LayerBytes)/(1<<20), b.Path)
	}
}
