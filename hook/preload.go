package hook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
)

// ContainerPreload is the dynamic loader's preload list in the container.
// The hook adds the shim there instead of the CDI spec setting LD_PRELOAD:
// a CDI env edit replaces the image's own LD_PRELOAD (tcmalloc, say), and
// nothing in a spec can refer to the image's value. The loader loads what
// LD_PRELOAD names and then what /etc/ld.so.preload lists, so the program
// gets both, and the image's LD_PRELOAD stays exactly as the image set it.
const ContainerPreload = "/etc/ld.so.preload"

// PreloadFileName is the combined list the hook writes into the container's
// telemetry directory on the host and mounts read-only at ContainerPreload.
const PreloadFileName = "ld.so.preload"

// maxPreload bounds what the hook reads of an image's list.
const maxPreload = 64 << 10

// readImagePreload returns the image's /etc/ld.so.preload, or nothing when
// it has none. It runs in the container's namespace; a symlink at the file
// or on the way to /etc is refused, as for every path the hook touches.
func readImagePreload(root *os.File, rootReal string) ([]byte, error) {
	etc, err := openDirExact(root, rootReal, filepath.Dir(ContainerPreload))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer etc.Close()
	// O_PATH first: it opens no device and no FIFO (a container with
	// CAP_MKNOD can plant either here), so the type is checked before
	// anything is really opened. Only a regular file is then reopened, by
	// that descriptor, for reading.
	fd, err := unix.Openat(int(etc.Fd()), filepath.Base(ContainerPreload), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inject: reading %s: %w", ContainerPreload, err)
	}
	handle := os.NewFile(uintptr(fd), ContainerPreload)
	defer handle.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("inject: reading %s: %w", ContainerPreload, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return nil, fmt.Errorf("%w: %s is a symlink", ErrUnsafeRootfs, ContainerPreload)
	default:
		return nil, fmt.Errorf("%w: %s is not a regular file (mode %#o); it was not opened", ErrUnsafeRootfs, ContainerPreload, st.Mode&unix.S_IFMT)
	}
	f, err := pathrs.Reopen(handle, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inject: reading %s: %w", ContainerPreload, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPreload+1))
	if err != nil {
		return nil, fmt.Errorf("inject: reading %s: %w", ContainerPreload, err)
	}
	if len(data) > maxPreload {
		return nil, fmt.Errorf("inject: %s is larger than %d bytes", ContainerPreload, maxPreload)
	}
	return data, nil
}

// PreloadWith is the image's list with the shim added last (the loader
// loads in order, so the image's libraries keep their place), unchanged
// if the shim is already listed. Entries are separated by white space.
func PreloadWith(image []byte) []byte {
	for _, f := range bytes.Fields(image) {
		if string(f) == ContainerShim {
			return image
		}
	}
	out := append([]byte(nil), image...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, ContainerShim+"\n"...)
}

// openDirExact opens an existing directory under root, insisting it
// resolves to exactly rootReal+path.
func openDirExact(root *os.File, rootReal, path string) (*os.File, error) {
	fd, err := unix.Openat(int(root.Fd()), filepath.Clean("."+path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, os.ErrNotExist
		}
		return nil, fmt.Errorf("%w: opening %s in the rootfs%s: %w", ErrUnsafeRootfs, path, symlinkOnPath(rootReal, path), err)
	}
	f := os.NewFile(uintptr(fd), path)
	if err := checkExact(f, rootReal, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// writePreload writes the combined list beside the socket on the host and
// returns a detached read-only clone of it, ready to attach.
func writePreload(socketDir string, list []byte) (int, error) {
	p := filepath.Join(socketDir, PreloadFileName)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, list, 0o644); err != nil {
		return -1, fmt.Errorf("inject: writing the preload list: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return -1, fmt.Errorf("inject: writing the preload list: %w", err)
	}
	return cloneReadOnly(p)
}
