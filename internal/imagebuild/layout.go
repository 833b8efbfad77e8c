package imagebuild

import "runtime"

// Repository is where the images are published by default.
const Repository = "ghcr.io/migpro"

// File is one regular file of an image.
type File struct {
	// Dest is its absolute path in the image.
	Dest string
	// Src names its source: a file in the build's bin directory, or Busybox.
	Src string
	// Exec marks a program run in the image; its ELF interpreter and shared
	// libraries are added to the image.
	Exec bool
}

// Busybox is the Src of the static busybox, from Debian's busybox-static.
const Busybox = "busybox"

// Image is one image migpro ships.
type Image struct {
	Name       string // e.g. "migpro-agent"
	Entrypoint []string
	// User is the image's user, empty for root.
	User  string
	Files []File
	// Applets are busybox applets linked in /bin (the agent image's init
	// container copies the hook and the shim to the host with sh, cp, mv).
	Applets []string
}

// AdmissionUser is the non-root user the admission image runs as.
const AdmissionUser = "65532:65532"

// Images is the layout of every image, in build order.
func Images() []Image {
	return []Image{
		{
			Name:       "migpro-agent",
			Entrypoint: []string{"/usr/local/bin/migpro-agent"},
			Files: []File{
				{Dest: "/usr/local/bin/migpro-agent", Src: "migpro-agent", Exec: true},
				{Dest: "/usr/local/bin/migpro-hook", Src: "migpro-hook", Exec: true},
				{Dest: "/usr/local/bin/migctl", Src: "migctl", Exec: true},
				// The shim is copied to the host and loaded into the user's
				// containers, never run here: its libraries are theirs.
				{Dest: "/usr/local/lib/migpro/libmigpro-shim.so", Src: "libmigpro-shim.so"},
				// The simulated driver's stubs (`make simdriver`), which
				// migpro-agent --simulate (the chart's simulate value)
				// installs under the simulated node's driver root; they run
				// in the user's containers, never here.
				{Dest: "/usr/local/lib/migpro/simdriver/libcuda.so", Src: "simdriver/libcuda.so"},
				{Dest: "/usr/local/lib/migpro/simdriver/libnvidia-ml.so", Src: "simdriver/libnvidia-ml.so"},
				{Dest: "/usr/local/lib/migpro/simdriver/nvidia-smi", Src: "simdriver/nvidia-smi"},
				{Dest: "/bin/busybox", Src: Busybox, Exec: true},
			},
			Applets: []string{"cat", "cp", "ls", "mv", "rm", "sh"},
		},
		{
			Name:       "migpro-admission",
			Entrypoint: []string{"/usr/local/bin/migpro-admission"},
			User:       AdmissionUser,
			Files: []File{
				{Dest: "/usr/local/bin/migpro-admission", Src: "migpro-admission", Exec: true},
			},
		},
	}
}

// LibDir is where shared libraries go in the images: the multiarch
// directory the C library's loader searches without an ld.so.cache.
func LibDir() string {
	switch runtime.GOARCH {
	case "arm64":
		return "/lib/aarch64-linux-gnu"
	default:
		return "/lib/x86_64-linux-gnu"
	}
}
