package hook

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A container that plants a FIFO or a device node at /etc/ld.so.preload
// (default capabilities include CAP_MKNOD) must not get the hook, as host
// root, to open it: the hook looks with O_PATH, sees it is no regular file,
// and refuses without opening it. A FIFO shows an open: a writer blocked in
// open(2) wakes when a reader opens it.
func TestInjectNeverOpensAPlantedFIFOOrDevice(t *testing.T) {
	pid := fakeContainer(t)
	rootfs := t.TempDir()
	etc := filepath.Join(rootfs, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(etc, "ld.so.preload")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{})
	go func() {
		fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_CLOEXEC, 0) // blocks until a reader opens
		if err == nil {
			unix.Close(fd)
			close(opened)
		}
	}()
	err := Inject(Injection{NSPath: "/proc/" + strconv.Itoa(pid) + "/ns/mnt", Rootfs: rootfs, SocketDir: t.TempDir()})
	if !errors.Is(err, ErrUnsafeRootfs) {
		t.Errorf("Inject with a FIFO at %s = %v, want ErrUnsafeRootfs", ContainerPreload, err)
	}
	select {
	case <-opened:
		t.Fatalf("the hook opened the planted FIFO at %s", ContainerPreload)
	case <-time.After(500 * time.Millisecond):
	}
	// Unblock the writer.
	if fd, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		<-opened
		unix.Close(fd)
	}

	// A device node (c 1 3, /dev/null's numbers) is refused the same way.
	os.Remove(fifo)
	if err := unix.Mknod(fifo, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	err = Inject(Injection{NSPath: "/proc/" + strconv.Itoa(pid) + "/ns/mnt", Rootfs: rootfs, SocketDir: t.TempDir()})
	if !errors.Is(err, ErrUnsafeRootfs) {
		t.Errorf("Inject with a device node at %s = %v, want ErrUnsafeRootfs", ContainerPreload, err)
	}
	if m := mountsUnder(t, pid, rootfs); len(m) != 0 {
		t.Errorf("mounted despite refusal: %v", m)
	}
}

// An image's own layout symlinks (/run -> var/run, /etc -> usr/etc) are not
// an attack: the hook mounts nothing through them and the container starts
// without telemetry (ErrNoMountPoint, which fails open) instead of being
// refused.
func TestInjectHarmlessSymlinksFailOpen(t *testing.T) {
	for name, plant := range map[string]func(r string) error{
		"run -> var/run": func(r string) error {
			if err := os.MkdirAll(filepath.Join(r, "var/run"), 0o755); err != nil {
				return err
			}
			return os.Symlink("var/run", filepath.Join(r, "run"))
		},
		"etc -> usr/etc": func(r string) error {
			if err := os.MkdirAll(filepath.Join(r, "usr/etc"), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(r, "usr/etc/ld.so.preload"), []byte("/lib/libimg.so\n"), 0o644); err != nil {
				return err
			}
			return os.Symlink("usr/etc", filepath.Join(r, "etc"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			pid, rootfs, err := injectPlanted(t, plant)
			if !errors.Is(err, ErrNoMountPoint) || errors.Is(err, ErrUnsafeRootfs) {
				t.Fatalf("Inject = %v, want ErrNoMountPoint (start without telemetry), not a refusal", err)
			}
			if m := mountsUnder(t, pid, rootfs); len(m) != 0 {
				t.Errorf("mounted through the symlink: %v", m)
			}
		})
	}
}
