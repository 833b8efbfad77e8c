package hook

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
)

// Paths inside the container. The CDI edits (CDIEdits) and the shim's
// defaults use the same constants.
const (
	// ContainerDir is where the container's own telemetry directory appears,
	// read-only.
	ContainerDir = "/run/migpro"
	// ContainerSocket is the shim's datagram socket.
	ContainerSocket = ContainerDir + "/telemetry.sock"
	// ContainerShim is where the shim library appears, read-only.
	ContainerShim = "/usr/lib/migpro/libmigpro-shim.so"
)

// ErrUnsafeRootfs marks a rootfs whose paths do not resolve where they must
// (a symlink planted at /run/migpro, say). The hook then changes nothing and
// the container does not start, whatever the fail-open setting.
var ErrUnsafeRootfs = errors.New("unsafe container rootfs")

// ErrNoMountPoint marks a rootfs where the mount point cannot be made for an
// ordinary reason: a read-only rootfs (EROFS), a full one (ENOSPC), or one
// the runtime's user may not write (EPERM, EACCES). The container then
// starts without telemetry (fail-open), unlike ErrUnsafeRootfs.
var ErrNoMountPoint = errors.New("cannot create the telemetry mount point")

// ordinaryMkdirFailure says whether err is one of the ErrNoMountPoint cases.
func ordinaryMkdirFailure(err error) bool {
	for _, e := range []error{unix.EROFS, unix.ENOSPC, unix.EDQUOT, unix.EPERM, unix.EACCES} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Injection says what to put into one container.
type Injection struct {
	// NSPath is the container's mount namespace, normally
	// /proc/<state.pid>/ns/mnt: the runtime has made it and set up the
	// container's mounts, but not yet pivoted into the rootfs.
	NSPath string
	// Rootfs is the absolute rootfs path; the runtime mounts it at the same
	// path inside the namespace.
	Rootfs string
	// SocketDir is the agent's host directory holding telemetry.sock,
	// mounted read-only at ContainerDir.
	SocketDir string
	// ShimHostPath, when set, is mounted read-only at ContainerShim. With
	// CDI the engine mounts the shim itself and this stays empty.
	ShimHostPath string
}

const roAttrs = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV

// Inject mounts the telemetry directory (and optionally the shim) into the
// container's mount namespace.
//
// Why a mount in the container's namespace, and done this way:
//   - The socket must be per container, but a CDI spec is per device, so
//     only the hook can mount it. Writing into the rootfs from the host
//     would miss whatever the runtime mounted over /run inside the
//     container, and would not survive an agent restart; a directory bind
//     shows the agent's re-created socket.
//   - The sources are cloned with open_tree in the host namespace and made
//     read-only before they are attached, so nothing depends on how the
//     container's namespace sees host paths, and the container never sees a
//     writable instant.
//   - Targets are resolved with pathrs-lite inside the rootfs (symlinks
//     cannot leave it, and the walk is race-free) and must resolve to
//     exactly <rootfs>/<path>: a symlink anywhere on the way is refused.
//   - move_mount attaches by file descriptor, so nothing can be swapped
//     between the check and the mount.
func Inject(in Injection) error {
	if !filepath.IsAbs(in.Rootfs) || !filepath.IsAbs(in.SocketDir) {
		return fmt.Errorf("inject: rootfs %q and socket dir %q must be absolute", in.Rootfs, in.SocketDir)
	}
	if filepath.Clean(in.Rootfs) == "/" {
		return fmt.Errorf("%w: the rootfs is the host's /; refusing to mount over %s", ErrUnsafeRootfs, ContainerDir)
	}
	if err := notHostNamespace(in.NSPath); err != nil {
		return err
	}
	dirTree, err := cloneReadOnly(in.SocketDir)
	if err != nil {
		return err
	}
	defer unix.Close(dirTree)
	shimTree := -1
	if in.ShimHostPath != "" {
		if shimTree, err = cloneReadOnly(in.ShimHostPath); err != nil {
			return err
		}
		defer unix.Close(shimTree)
	}
	// The image's preload list is read in the container's namespace, the
	// combined one written and cloned on the host (open_tree clones only
	// mounts of the caller's namespace), then attached with the rest.
	var image []byte
	if err := inNamespace(in.NSPath, func() error {
		root, rootReal, err := openRoot(in.Rootfs)
		if err != nil {
			return err
		}
		defer root.Close()
		image, err = readImagePreload(root, rootReal)
		return err
	}); err != nil {
		return err
	}
	preloadTree := -1
	if list := PreloadWith(image); !bytes.Equal(list, image) {
		if preloadTree, err = writePreload(in.SocketDir, list); err != nil {
			return err
		}
		defer unix.Close(preloadTree)
	}
	return inNamespace(in.NSPath, func() error {
		root, rootReal, err := openRoot(in.Rootfs)
		if err != nil {
			return err
		}
		defer root.Close()
		dir, err := mkdirExact(root, rootReal, ContainerDir)
		if err != nil {
			return err
		}
		defer dir.Close()
		if shimTree >= 0 {
			if err := attachFile(root, rootReal, shimTree, ContainerShim); err != nil {
				return err
			}
		}
		if err := unix.MoveMount(dirTree, "", int(dir.Fd()), "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			return fmt.Errorf("inject: mounting %q at %s: %w", in.SocketDir, ContainerDir, err)
		}
		if preloadTree >= 0 {
			if err := attachFile(root, rootReal, preloadTree, ContainerPreload); err != nil {
				return err
			}
		}
		return nil
	})
}

// openRoot opens the rootfs in the current namespace and resolves its real
// path, against which every target is checked.
func openRoot(rootfs string) (*os.File, string, error) {
	root, err := os.OpenFile(rootfs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("inject: opening rootfs %q in the container's namespace: %w", rootfs, err)
	}
	rootReal, err := fdPath(root)
	if err != nil {
		_ = root.Close()
		return nil, "", err
	}
	if rootReal == "/" {
		_ = root.Close()
		return nil, "", fmt.Errorf("%w: rootfs %q resolves to / in the container's namespace; refusing to mount over %s", ErrUnsafeRootfs, rootfs, ContainerDir)
	}
	return root, rootReal, nil
}

// notHostNamespace refuses a mount namespace that is the hook's own (the
// host's, for a hook the runtime runs): a state pid there would make the
// hook mount over the host's paths.
func notHostNamespace(nsPath string) error {
	var target, self unix.Stat_t
	if err := unix.Stat(nsPath, &target); err != nil {
		return fmt.Errorf("inject: mount namespace %q: %w", nsPath, err)
	}
	// This thread's namespace: /proc/self names the thread-group leader,
	// which an earlier inNamespace may have left in a container's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Stat("/proc/thread-self/ns/mnt", &self); err != nil {
		return fmt.Errorf("inject: own mount namespace: %w", err)
	}
	if target.Dev == self.Dev && target.Ino == self.Ino {
		return fmt.Errorf("%w: %s is the hook's own (the host's) mount namespace, not a container's; refusing to mount into it", ErrUnsafeRootfs, nsPath)
	}
	return nil
}

// cloneReadOnly makes a detached, read-only bind of a host path.
func cloneReadOnly(src string) (int, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("inject: cloning %q (open_tree needs Linux 5.2+): %w", src, err)
	}
	attr := unix.MountAttr{Attr_set: roAttrs}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("inject: making %q read-only (mount_setattr needs Linux 5.12+): %w", src, err)
	}
	return fd, nil
}

// inNamespace runs fn on a thread that has joined the mount namespace at
// nsPath. The thread is never unlocked, so the Go runtime retires it with
// the goroutine instead of reusing a thread in a foreign namespace.
func inNamespace(nsPath string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// setns(CLONE_NEWNS) refuses a thread that shares its filesystem
		// context with others, as every Go thread does.
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			errc <- fmt.Errorf("inject: unshare(CLONE_FS): %w", err)
			return
		}
		fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("inject: opening mount namespace %s: %w", nsPath, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNS)
		_ = unix.Close(fd)
		if err != nil {
			errc <- fmt.Errorf("inject: joining mount namespace %s: %w", nsPath, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

func fdPath(f *os.File) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return "", fmt.Errorf("inject: resolving %q: %w", f.Name(), err)
	}
	return p, nil
}

// mkdirExact creates (or opens) path under root and insists it resolved to
// exactly rootReal+path.
func mkdirExact(root *os.File, rootReal, path string) (*os.File, error) {
	dir, err := pathrs.MkdirAllHandle(root, path, 0o755)
	if err != nil {
		if link := symlinkOnPath(rootReal, path); link == "" && ordinaryMkdirFailure(err) {
			return nil, fmt.Errorf("%w: creating %q in the rootfs: %w", ErrNoMountPoint, path, err)
		}
		if harmlessSymlinks(rootReal, path) {
			return nil, fmt.Errorf("%w: %q goes through a symlink inside the image%s; no telemetry mount there", ErrNoMountPoint, path, symlinkOnPath(rootReal, path))
		}
		return nil, fmt.Errorf("%w: creating %q in the rootfs%s: %w", ErrUnsafeRootfs, path, symlinkOnPath(rootReal, path), err)
	}
	if err := checkExact(dir, rootReal, path); err != nil {
		dir.Close()
		return nil, err
	}
	return dir, nil
}

func checkExact(f *os.File, rootReal, path string) error {
	got, err := fdPath(f)
	if err != nil {
		return err
	}
	if want := filepath.Join(rootReal, path); got != want {
		rel, _ := filepath.Rel(rootReal, got)
		if harmlessSymlinks(rootReal, path) {
			return fmt.Errorf("%w: %q resolves to %q through a symlink inside the image%s; no telemetry mount there",
				ErrNoMountPoint, path, "/"+rel, symlinkOnPath(rootReal, path))
		}
		return fmt.Errorf("%w: %q resolves to %q through a symlink; refusing to mount over it", ErrUnsafeRootfs, path, "/"+rel)
	}
	return nil
}

// attachFile mounts tree over a regular file at path (the shim, the
// preload list), creating the empty mount point if needed.
func attachFile(root *os.File, rootReal string, tree int, path string) error {
	dir, err := mkdirExact(root, rootReal, filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	name := filepath.Base(path)
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if errors.Is(err, unix.EEXIST) {
		// Already there (the image's, or an earlier mount): reuse it only
		// if it is a plain file, never through a symlink.
		fd, err = unix.Openat(int(dir.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			var st unix.Stat_t
			if err = unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
				unix.Close(fd)
				return fmt.Errorf("%w: %s exists and is not a regular file", ErrUnsafeRootfs, path)
			}
		}
	}
	if err != nil {
		if ordinaryMkdirFailure(err) {
			return fmt.Errorf("%w: creating %q: %w", ErrNoMountPoint, path, err)
		}
		return fmt.Errorf("inject: creating mount point %q: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("inject: mounting at %s: %w", path, err)
	}
	return nil
}

// symlinkOnPath names the first symlink on path, for the error message only:
// decisions are made on descriptors, never on this racy walk.
func symlinkOnPath(rootReal, path string) string {
	cur := rootReal
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		cur = filepath.Join(cur, part)
		if target, err := os.Readlink(cur); err == nil {
			rel, _ := filepath.Rel(rootReal, cur)
			return fmt.Sprintf(" (%q is a symlink to %q)", "/"+rel, target)
		}
	}
	return ""
}

// harmlessSymlinks says whether every symlink on path is one an image has
// for its own layout (/run -> var/run, /etc -> usr/etc): a relative target
// with no "..". The hook still mounts nothing through it, but the container
// starts without telemetry (ErrNoMountPoint) instead of being refused. An
// absolute target or one climbing with ".." is what an attack plants, and
// stays ErrUnsafeRootfs. Like symlinkOnPath this walk only classifies a
// failure already decided on descriptors.
func harmlessSymlinks(rootReal, path string) bool {
	cur, found := rootReal, false
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		cur = filepath.Join(cur, part)
		target, err := os.Readlink(cur)
		if err != nil {
			continue
		}
		found = true
		if filepath.IsAbs(target) || slices.Contains(strings.Split(target, "/"), "..") {
			return false
		}
	}
	return found
}
